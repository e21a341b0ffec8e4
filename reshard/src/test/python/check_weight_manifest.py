"""Feeds exported #3187 manifests to Mooncake's real ``WeightManifest.from_json``.

For each file named on the command line prints ``<file> <manifest_digest> <same>``, where
``same`` is ``canonical`` when the real ``to_json`` writes the input back byte for byte and
``differs`` otherwise, or ``<file> refused <reason>`` when the real package refuses it.
"""

from __future__ import annotations

import sys

from mooncake.reshard.weight import WeightManifest


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            manifest = WeightManifest.from_json(text)
        except ValueError as error:
            print(f"{path} refused {error}")
            continue
        same = "canonical" if manifest.to_json() == text else "differs"
        print(f"{path} {manifest.manifest_digest} {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
