"""libstdc++'s std::sort, step for step, for XProf's orders: std::sort is
not stable, and where XProf sorts rows with equal keys (buffers of one size,
ops of one time) their order is the one its introsort leaves. The sort is
a median-of-three introsort down to runs of 16, then an insertion sort."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def std_sort(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """libstdc++'s std::sort (introsort, then insertion sort), in place: the same order of equal elements."""
    a = items
    n = len(a)
    if n < 2:
        return a

    def median_to_first(result, i, j, k):
        if less(a[i], a[j]):
            if less(a[j], a[k]):
                a[result], a[j] = a[j], a[result]
            elif less(a[i], a[k]):
                a[result], a[k] = a[k], a[result]
            else:
                a[result], a[i] = a[i], a[result]
        elif less(a[i], a[k]):
            a[result], a[i] = a[i], a[result]
        elif less(a[j], a[k]):
            a[result], a[k] = a[k], a[result]
        else:
            a[result], a[j] = a[j], a[result]

    def partition(first, last, pivot):
        while True:
            while less(a[first], a[pivot]):
                first += 1
            last -= 1
            while less(a[pivot], a[last]):
                last -= 1
            if not first < last:
                return first
            a[first], a[last] = a[last], a[first]
            first += 1

    def introsort(first, last, depth):
        while last - first > 16:
            if depth == 0:
                # libstdc++ heap-sorts here (only on adversarial input); a stable sort stands in.
                a[first:last] = sorted(a[first:last], key=functools.cmp_to_key(lambda x, y: -less(x, y) or +less(y, x)))
                return
            depth -= 1
            mid = first + (last - first) // 2
            median_to_first(first, first + 1, mid, last - 1)
            cut = partition(first + 1, last, first)
            introsort(cut, last, depth)
            last = cut

    def linear_insert(i):
        val = a[i]
        j = i - 1
        while j >= 0 and less(val, a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = val

    def insertion_sort(first, last):
        for i in range(first + 1, last):
            if less(a[i], a[first]):
                val = a[i]
                a[first + 1 : i + 1] = a[first:i]
                a[first] = val
            else:
                linear_insert(i)

    introsort(0, n, 2 * (n.bit_length() - 1))
    if n > 16:
        insertion_sort(0, 16)
        for i in range(16, n):
            linear_insert(i)
    else:
        insertion_sort(0, n)
    return a


def std_partial_sort(items: list[T], k: int, less: Callable[[T, T], bool]) -> list[T]:
    """libstdc++'s std::partial_sort of the first k (a heap select, then a heap sort), in place: the same order
    of equal elements."""
    a = items
    middle = min(k, len(a))

    def adjust(hole: int, n: int, value) -> None:
        top = second = hole
        while second < (n - 1) // 2:
            second = 2 * (second + 1)
            if less(a[second], a[second - 1]):
                second -= 1
            a[hole] = a[second]
            hole = second
        if n % 2 == 0 and second == (n - 2) // 2:
            second = 2 * (second + 1)
            a[hole] = a[second - 1]
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and less(a[parent], value):
            a[hole] = a[parent]
            hole = parent
            parent = (hole - 1) // 2
        a[hole] = value

    def pop(last: int, result: int) -> None:
        value = a[result]
        a[result] = a[0]
        adjust(0, last, value)

    if middle >= 2:
        for parent in range((middle - 2) // 2, -1, -1):
            adjust(parent, middle, a[parent])
    for i in range(middle, len(a)):
        if middle and less(a[i], a[0]):
            pop(middle, i)
    for last in range(middle - 1, 0, -1):
        pop(last, last)
    return a
