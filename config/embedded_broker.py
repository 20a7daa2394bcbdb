"""The embedded broker: kombu's filesystem transport, made safe for several processes.

``make run`` needs no broker server: messages are files in ``var/broker/``. kombu's own
filesystem transport loses or corrupts messages when several processes share the folder
(docs/reliability.md, "Embedded broker"): its writer creates the message file and only
then writes it, so a polling reader can take an empty or half-written file (the worker
dies of a JSONDecodeError); its reader claims a file with ``shutil.move``, a copy and a
delete when the processed folder is on another file system, so two readers can both
take one; and the exchange table is truncated before it is locked.

Here every step that another process can observe is one atomic rename or happens under
the table's lock:

- a message is written and flushed under a hidden name no reader looks at, then renamed
  to its real name: a reader only ever sees a complete message;
- a reader claims a message by renaming it into the processed folder (the same file
  system, ``rename(2)``): of two readers exactly one succeeds, the other moves on;
- the exchange table is opened without truncation and changed under its exclusive lock;
  a table a writer has created but not yet filled reads as empty.

Selected by ``CELERY_BROKER_TRANSPORT`` whenever ``CELERY_BROKER_URL`` is ``filesystem://``
(config/settings/base.py).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

# A message being written: the reader's filter ("<queue>.msg" after the first dot) never
# matches it, since no name of this form ends in ".msg".
STAGING_PREFIX = ".part-"


def filesystem_options(broker_dir: Path, polling_interval: float = 0.05) -> dict[str, Any]:
    """The transport options for a broker kept in ``broker_dir`` (created here)."""
    for sub in ("queue", "processed", "control"):
        (broker_dir / sub).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(broker_dir / "queue"),
        "data_folder_out": str(broker_dir / "queue"),
        # Claims are renames into it: it must be on the queue's file system.
        "processed_folder": str(broker_dir / "processed"),
        "store_processed": False,
        "control_folder": str(broker_dir / "control"),
        "polling_interval": polling_interval,
    }


class Channel(filesystem.Channel):
    """kombu's filesystem channel with atomic publish, claim and exchange-table updates."""

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        staging = os.path.join(self.data_folder_out, f"{STAGING_PREFIX}{uuid.uuid4().hex}")
        data = str_to_bytes(dumps(payload))
        try:
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)  # the rename must not outlive the bytes in a power cut
            finally:
                os.close(fd)
            os.rename(staging, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(staging)
            raise ChannelError(f"Cannot add message {final!r} to the broker folder") from exc

    def _get(self, queue: str) -> Any:
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.processed_folder, name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue  # another reader claimed it first
            except OSError as exc:
                raise ChannelError(
                    f"Cannot claim {name!r}: the processed folder {self.processed_folder!r} "
                    "must exist on the queue folder's file system"
                ) from exc
            try:
                with open(claimed, "rb") as handle:
                    payload = handle.read()
                if not self.store_processed:
                    os.remove(claimed)
            except OSError as exc:
                raise ChannelError(f"Cannot read {claimed!r} from the broker folder") from exc
            return loads(bytes_to_str(payload))
        raise virtual.Empty()

    def get_table(self, exchange: str) -> list:
        file = self._exchange_file(exchange)
        try:
            with file.open("rb") as handle:
                filesystem.lock(handle, filesystem.LOCK_SH)
                try:
                    return _table(handle.read())
                finally:
                    filesystem.unlock(handle)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def bind(table: list) -> list:
            return table if binding in table else [binding, *table]

        self._update_table(exchange, bind)

    def _delete(
        self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any
    ) -> None:
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._update_table(exchange, lambda table: [b for b in table if b != binding])

    def _update_table(self, exchange: str, change: Any) -> None:
        """Read, change and write the exchange's table under its exclusive lock."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o666)  # never truncates
            with os.fdopen(fd, "r+b", buffering=0) as handle:
                filesystem.lock(handle, filesystem.LOCK_EX)
                try:
                    table = _table(handle.read())
                    changed = change(table)
                    if changed != table or not table:
                        handle.seek(0)
                        handle.write(str_to_bytes(dumps(changed)))
                        handle.truncate()
                finally:
                    filesystem.unlock(handle)
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc


def _table(raw: bytes) -> list:
    """The bindings in an exchange file; one just created and not yet written has none."""
    if not raw.strip():
        return []
    return [filesystem.exchange_queue_t(*binding) for binding in loads(bytes_to_str(raw))]


class Transport(filesystem.Transport):
    """The filesystem transport with :class:`Channel`; it shares kombu's broker state."""

    Channel = Channel
