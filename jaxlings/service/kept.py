"""Work kept by what it was computed from: the renders and reads of students' uploads that pages
repeat at every view (highlighted files, diffs, the similarity report's normalised functions),
bounded in count and, where given, in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Kept(Generic[T]):
    """The last `most` values computed, by key (content digests: never the content itself), and
    at most `most_bytes` of them by `size` where given; the least recently used dropped first.
    Pages render in a pool of threads: a value is computed outside the lock, and where two
    threads computed one key at once, the first kept is the one both return from then on."""

    def __init__(self, most: int, most_bytes: int | None = None, size: Callable[[T], int] | None = None) -> None:
        self.most, self.most_bytes, self.size = most, most_bytes, size
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept under `key`, else `compute()`, kept."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key][0]
        value = compute()
        nbytes = self.size(value) if self.size is not None else 0
        with self._lock:
            if key not in self._values:
                self._values[key] = (value, nbytes)
                self._bytes += nbytes
            kept = self._values[key][0]
            while self._values and (
                len(self._values) > self.most or (self.most_bytes is not None and self._bytes > self.most_bytes)
            ):
                self._bytes -= self._values.popitem(last=False)[1][1]
        return kept

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._bytes = 0
