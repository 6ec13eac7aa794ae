"""Freed host memory kept in the process, as an accelerator's caching allocator keeps freed blocks.

Torch's CPU tensors come from glibc's malloc, which hands a block above its mmap threshold (128 KiB
at first) straight back to the kernel when it is freed, and trims the heap's free top above its
trim threshold. Every training step then page-faults its activations and gradients in anew. CUDA's
caching allocator reuses its blocks, so on a GPU this cost does not exist; on a CPU it is not even
the same for every executor (lean_retain holds all its graphs at once, lean_reweight allocates its
gradients once per sample). The bench therefore asks glibc to keep what it frees (``mallopt``,
glibc's documented tuning interface: mallopt(3)), so the times it measures are compute and not the
kernel's page-fault handler. Elsewhere than glibc nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # malloc.h: free heap top kept before trimming
M_MMAP_THRESHOLD = -3  # malloc.h: smallest request served by its own mmap
LARGEST_MMAP_THRESHOLD = 32 * 2**20  # glibc's ceiling on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
KEPT_HEAP_TOP = 2**31 - 1  # mallopt takes an int: about 2 GiB of free heap top kept


def keep_freed_memory() -> bool:
    """Serve allocations up to 32 MiB from the heap and never trim it; True where glibc took both."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # not glibc (musl, macOS)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGEST_MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, KEPT_HEAP_TOP))
