//! How a sleet process gets its memory from the kernel.
//!
//! mimalloc asks for transparent huge pages on the arenas it reserves, so a heap that grows
//! faults in 2 MiB at a time and the thread that touched it zeroes the whole page first. In
//! `bench sched` at 16 workers (17 processes on two cores, each growing its heap through the
//! first thousand batches) that zeroing took a visible share of the driver's time and made
//! every batch longer, while ysb's capacity was the same either way, so every sleet process
//! takes small pages (measured, see docs/experiments/2026-11-27-group-scheduling-regression.md).

/// Turns transparent huge pages off for this process and every process it starts (the flag
/// is inherited across fork and exec). `entry::run` calls it before the runtime starts: pages
/// already faulted in stay as they are.
pub fn small_pages_only() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes plain integers and changes only a flag of this
    // process; it cannot touch memory the program owns.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
