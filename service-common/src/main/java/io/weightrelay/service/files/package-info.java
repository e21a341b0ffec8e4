/** Files a service writes into a directory it is handed (checkpoints), and reads back from it. */
package io.weightrelay.service.files;
