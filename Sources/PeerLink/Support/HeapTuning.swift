import CPeerLinkSys
#if canImport(Glibc)
import Glibc
#endif

/// glibc's allocator hands freed heap back to the kernel as soon as 128 KiB lie free at the
/// top of an arena. PeerLink's buffers (16 KiB frames, 64 KiB messages, 1 MiB file chunks)
/// come and go in bursts larger than that, so each burst faults its pages in again: about a
/// quarter of the CPU time of a bulk transfer over loopback (docs/PERFORMANCE.md). A process
/// that moves bulk data calls this once, before its first node starts; the CLI does.
public enum HeapTuning {
    /// Keeps up to `trim` bytes of freed heap per arena and serves blocks below `mmap` bytes
    /// from the heap (without it, setting the first would send every block of 128 KiB or
    /// more to its own `mmap`). Leaves the allocator alone when the environment sets either
    /// (`MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`): the user's choice wins.
    public static func keepFreedHeap(trim: Int = 8 << 20, mmap: Int = 4 << 20) {
        guard getenv("MALLOC_TRIM_THRESHOLD_") == nil, getenv("MALLOC_MMAP_THRESHOLD_") == nil else { return }
        _ = peerlink_heap_thresholds(Int32(clamping: trim), Int32(clamping: mmap))
    }
}
