"""A pickle reader for plain data only (PyTorch's CUDA memory snapshots).

Python's own unpickler imports and calls whatever a pickle names, so it is
never used on a file. This reader walks the opcodes of protocols 2-5 itself
and knows only those that build dict, list, tuple, str, bytes, int, float,
bool and None (with the memo, frames and marks). Any other opcode, above all
those that import or call (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
NEWOBJ, NEWOBJ_EX, EXT1-4, PERSID, BINPERSID), is refused with its name and
offset: no object is ever made from it, nothing is imported or run.

Bounded, so a small file cannot exhaust the memory or the stack of whoever
walks the result:
- nesting depth (PROFSCOPE_MAX_NESTING, as text formats);
- objects: the memo's entries and the result's size counted as a tree (a
  shared object counts once per place it appears, so a "bomb" of repeated
  memo references is refused) (PROFSCOPE_MAX_PICKLE_OBJECTS, or 4 a byte of
  the file when that is more);
- a container may not change after it is placed in another: the pickler
  never does that for acyclic data, and so no cycle can be made.
"""

from __future__ import annotations

import mmap
import struct

from profscope.models.core.guards import _setting, max_nesting, nesting_refused
from profscope.models.core.task import ProfileError

MAX_PICKLE_OBJECTS = 200_000_000  # default; PROFSCOPE_MAX_PICKLE_OBJECTS raises it
MAX_INT_BYTES = 64  # a LONG1/LONG4 longer than this is no snapshot's number

# Opcodes that import, call or refer to outside objects: refused by name.
FORBIDDEN = {
    b"c"[0]: "GLOBAL", 0x93: "STACK_GLOBAL", b"R"[0]: "REDUCE", b"b"[0]: "BUILD", b"i"[0]: "INST",
    b"o"[0]: "OBJ", 0x81: "NEWOBJ", 0x92: "NEWOBJ_EX", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4",
    b"P"[0]: "PERSID", b"Q"[0]: "BINPERSID", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
}

_I4 = struct.Struct("<i").unpack_from
_U4 = struct.Struct("<I").unpack_from
_U8 = struct.Struct("<Q").unpack_from
_F8 = struct.Struct(">d").unpack_from
_H2 = struct.Struct("<H").unpack_from


OBJECTS_PER_BYTE = 4  # a file may hold this many objects a byte as a tree (a real snapshot: ~1.2, its frames shared)


def max_objects(size: int = 0) -> int:
    """The most objects (as a tree) a pickle of `size` bytes may hold: the setting, or more for a big file, as a
    real snapshot refers to its shared frames once per entry; a bomb of memo references grows exponentially."""
    return max(int(_setting("PROFSCOPE_MAX_PICKLE_OBJECTS", MAX_PICKLE_OBJECTS)), OBJECTS_PER_BYTE * size)


def refused_opcode(what: str, op: int, at: int) -> ProfileError:
    name = FORBIDDEN.get(op)
    if name:
        return ProfileError(f"{what}: opcode {name} at offset {at} would import or call code; refusing to read it "
                            "(a memory snapshot holds only plain data)")
    return ProfileError(f"{what}: opcode {bytes([op])!r} at offset {at} is not one of plain data; refusing to read it")


def too_many_objects(what: str, limit: int) -> ProfileError:
    return ProfileError(
        f"{what}: holds more than {limit:,} objects (counting each place a shared one appears); "
        "refusing to read it. Raise the limit with the environment variable "
        f"PROFSCOPE_MAX_PICKLE_OBJECTS (now {limit})")


def integer_too_long(what: str, k: int, at: int) -> ProfileError:
    return ProfileError(f"{what}: an integer of {k} bytes at offset {at}; refusing to read it")


def changed_after_placed(what: str, at: int) -> ProfileError:
    return ProfileError(f"{what}: a container changes after it was placed in another at offset {at} "
                        "(a cycle); refusing to read it")


def placed_in_itself(what: str, at: int) -> ProfileError:
    return ProfileError(f"{what}: a container placed in itself at offset {at}; refusing to read it")


def unhashable_key(what: str, at: int) -> ProfileError:
    return ProfileError(f"{what}: an unhashable dict key at offset {at}")


def not_a_pickle(what: str) -> ProfileError:
    return ProfileError(f"{what}: not a pickle of protocol 2-5")


def truncated(what: str) -> ProfileError:
    return ProfileError(f"{what}: the pickle is truncated or corrupt")


class _Mark:
    __slots__ = ()


MARK = _Mark()


def is_pickle(head: bytes | bytearray | memoryview | mmap.mmap) -> bool:
    """Whether bytes start as a pickle of protocol 2-5 does."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def loads(data: bytes | bytearray | memoryview | mmap.mmap, what: str = "the pickle") -> object:
    """The plain object a pickle holds; ProfileError naming `what` when it
    holds anything else, is truncated or passes a limit."""
    try:
        return _Reader(data, what).run()
    except (IndexError, KeyError, struct.error, UnicodeDecodeError):
        raise truncated(what) from None


class _Reader:
    def __init__(self, data: bytes | bytearray | memoryview | mmap.mmap, what: str) -> None:
        self.data = data
        self.what = what
        self.depth_limit = max_nesting()
        self.object_limit = max_objects(len(data))


    def run(self) -> object:  # noqa: C901 - one loop over the opcodes, fastest as one function
        data, n = self.data, len(self.data)
        if not is_pickle(data):
            raise not_a_pickle(self.what)
        what = self.what
        depth_limit, object_limit = self.depth_limit, self.object_limit
        stack: list = []
        marks: list[int] = []
        memo: dict[int, object] = {}
        # Containers' (depth, tree size); sealed: those placed in another.
        info: dict[int, tuple[int, int]] = {}
        sealed: set[int] = set()
        p = 2

        def measure(items, start_depth: int, start_size: int) -> tuple[int, int]:
            depth, size = start_depth, start_size
            for x in items:
                if type(x) in (list, dict, tuple):
                    d, s = info[id(x)]
                    sealed.add(id(x))
                    size += s
                    if d >= depth:
                        depth = d + 1
                else:
                    size += 1
            if depth > depth_limit:
                raise nesting_refused(what, depth_limit)
            if size > object_limit:
                raise too_many()
            return depth, size

        def too_many() -> ProfileError:
            return too_many_objects(what, object_limit)

        def pop_mark() -> list:
            if not marks:
                raise ProfileError(f"{what}: a corrupt pickle (no MARK at offset {at})")
            k = marks.pop()
            items = stack[k:]
            del stack[k:]
            return items

        def mutable(target, kind: type, at: int):
            if type(target) is not kind:
                raise ProfileError(f"{what}: a corrupt pickle (adding {kind.__name__} items to a "
                                   f"{type(target).__name__} at offset {at})")
            if id(target) in sealed:
                raise changed_after_placed(what, at)

        while True:
            at = p
            op = data[p]
            p += 1
            if op == 0x8C:  # SHORT_BINUNICODE
                k = data[p]
                if p + 1 + k > n:
                    raise IndexError
                stack.append(str(data[p + 1 : p + 1 + k], "utf-8", "surrogatepass"))
                p += 1 + k
            elif op == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
                if len(memo) > object_limit:
                    raise too_many()
            elif op == 0x4B:  # BININT1
                stack.append(data[p])
                p += 1
            elif op == 0x4A:  # BININT
                stack.append(_I4(data, p)[0])
                p += 4
            elif op == 0x4D:  # BININT2
                stack.append(_H2(data, p)[0])
                p += 2
            elif op == 0x8A or op == 0x8B:  # LONG1, LONG4
                if op == 0x8A:
                    k, p = data[p], p + 1
                else:
                    k, p = _U4(data, p)[0], p + 4
                if k > MAX_INT_BYTES:
                    raise integer_too_long(what, k, at)
                if p + k > n:
                    raise IndexError
                stack.append(int.from_bytes(data[p : p + k], "little", signed=True))
                p += k
            elif op == 0x68:  # BINGET
                stack.append(memo[data[p]])
                p += 1
            elif op == 0x6A:  # LONG_BINGET
                stack.append(memo[_U4(data, p)[0]])
                p += 4
            elif op == 0x28:  # MARK
                marks.append(len(stack))
                if len(marks) > depth_limit:
                    raise nesting_refused(what, depth_limit)
            elif op == 0x7D:  # EMPTY_DICT
                d: dict = {}
                info[id(d)] = (1, 1)
                stack.append(d)
            elif op == 0x5D:  # EMPTY_LIST
                lst: list = []
                info[id(lst)] = (1, 1)
                stack.append(lst)
            elif op == 0x75 or op == 0x73:  # SETITEMS, SETITEM
                if op == 0x75:
                    items = pop_mark()
                else:
                    if len(stack) < 3:
                        raise IndexError
                    items = stack[-2:]
                    del stack[-2:]
                target = stack[-1]
                if len(items) % 2:
                    raise ProfileError(f"{what}: a corrupt pickle (odd SETITEMS at offset {at})")
                mutable(target, dict, at)
                depth, size = info[id(target)]
                info[id(target)] = measure(items, depth, size)
                if id(target) in sealed:  # placed in itself
                    raise placed_in_itself(what, at)
                it = iter(items)
                try:
                    for key in it:
                        target[key] = next(it)
                except TypeError:  # a list or dict as a key, or a tuple holding one
                    raise unhashable_key(what, at) from None
            elif op == 0x65 or op == 0x61:  # APPENDS, APPEND
                if op == 0x65:
                    items = pop_mark()
                else:
                    items = [stack.pop()]
                target = stack[-1]
                mutable(target, list, at)
                depth, size = info[id(target)]
                info[id(target)] = measure(items, depth, size)
                if id(target) in sealed:
                    raise placed_in_itself(what, at)
                target.extend(items)
            elif op == 0x71:  # BINPUT
                memo[data[p]] = stack[-1]
                p += 1
            elif op == 0x72:  # LONG_BINPUT
                memo[_U4(data, p)[0]] = stack[-1]
                p += 4
                if len(memo) > object_limit:
                    raise too_many()
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op == 0x47:  # BINFLOAT
                stack.append(_F8(data, p)[0])
                p += 8
            elif op in (0x29, 0x74, 0x85, 0x86, 0x87):  # EMPTY_TUPLE, TUPLE, TUPLE1-3
                if op == 0x74:
                    items = pop_mark()
                elif op == 0x29:
                    items = []
                else:
                    k = op - 0x84
                    if len(stack) < k:
                        raise IndexError
                    items = stack[-k:]
                    del stack[-k:]
                t = tuple(items)
                info[id(t)] = measure(items, 1, 1)
                stack.append(t)
            elif op == 0x58 or op == 0x8D:  # BINUNICODE, BINUNICODE8
                k, p = (_U4(data, p)[0], p + 4) if op == 0x58 else (_U8(data, p)[0], p + 8)
                if p + k > n:
                    raise IndexError
                stack.append(str(data[p : p + k], "utf-8", "surrogatepass"))
                p += k
            elif op in (0x43, 0x42, 0x8E, 0x96):  # SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8
                if op == 0x43:
                    k, p = data[p], p + 1
                elif op == 0x42:
                    k, p = _U4(data, p)[0], p + 4
                else:
                    k, p = _U8(data, p)[0], p + 8
                if p + k > n:
                    raise IndexError
                stack.append(bytes(data[p : p + k]))
                p += k
            elif op == 0x95:  # FRAME (a buffering hint)
                p += 8
            elif op == 0x30:  # POP
                if stack and len(stack) > (marks[-1] if marks else -1):
                    stack.pop()
                else:
                    pop_mark()
            elif op == 0x31:  # POP_MARK
                pop_mark()
            elif op == 0x32:  # DUP
                stack.append(stack[-1])
            elif op == 0x2E:  # STOP
                if len(stack) != 1 or marks:
                    raise ProfileError(f"{what}: a corrupt pickle (STOP at offset {at} with "
                                       f"{len(stack)} values on the stack)")
                return stack[0]
            elif op == 0x80:  # PROTO (again)
                p += 1
            else:
                raise refused_opcode(what, op, at)
