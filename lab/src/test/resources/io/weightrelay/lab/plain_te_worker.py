"""A rollout worker that receives into its own Mooncake Transfer Engine, as vLLM or SGLang would:
a plain Python process that runs ``mooncake.engine.TransferEngine`` and nothing of weight-relay but
the package's registration helpers (no agent, no store client, no loader client).

argv[1]: JSON ``{"segment": name, "buffers": [{"bufferId", "size"}, ...]}``. It allocates one
region of anonymous memory holding the buffers as the loader packs a segment
(``weight_relay.loader.buffer_offsets``), registers it with its Transfer Engine through
``weight_relay.mooncake_client.register_receive_buffer``, and prints one line: the JSON list of the
buffers as the worker's loader registration declares them (``ReceiveBuffer.registration``). Then,
per line ``dump <directory>`` on stdin, it writes the region's bytes, as it holds them, to
``<directory>/<segment>`` and answers ``dumped``. Ends at end of input.
"""

import json
import mmap
import os
import sys

os.environ["MC_TCP_BIND_ADDRESS"] = "127.0.0.1"

from mooncake.engine import TransferEngine  # noqa: E402

from weight_relay.loader import buffer_offsets  # noqa: E402
from weight_relay.mooncake_client import buffer_address, register_receive_buffer  # noqa: E402

spec = json.loads(sys.argv[1])
sizes = {str(b["bufferId"]): int(b["size"]) for b in spec["buffers"]}
offsets = buffer_offsets(sizes)
engine = TransferEngine()
if engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") != 0:
    raise SystemExit("the Transfer Engine did not start")
memory = mmap.mmap(-1, max(offsets[b] + s for b, s in sizes.items()))
rb = register_receive_buffer(engine, "127.0.0.1", buffer_address(memory), len(memory))
print(json.dumps([rb.registration(b, spec["segment"], s) for b, s in sizes.items()]), flush=True)
for line in sys.stdin:
    directory = line.split(maxsplit=1)[1].strip()
    with open(os.path.join(directory, spec["segment"]), "wb") as out:
        out.write(memory[:])
    print("dumped", flush=True)
