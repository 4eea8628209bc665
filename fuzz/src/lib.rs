//! What every fuzz target shares: an allocator that aborts on one allocation past
//! `ALLOCATION_BYTES_MAX`.
//!
//! libFuzzer's `-malloc_limit_mb` sees allocations only through a sanitizer's hooks, and
//! `-rss_limit_mb` only memory that is touched: a zero-filled gigabyte the parser reserves
//! and never writes (calloc maps it lazily) passes both in a build without a sanitizer, as CI's
//! smoke is. Each target links this crate (`use sleet_fuzz as _;`), so such an allocation is a
//! crash there too, with the input saved like any other.

use std::alloc::{GlobalAlloc, Layout, System};

/// Far above what any input of a few kilobytes needs, and above the parsers' own bounds (a
/// Kafka response or a decompressed batch: 256 MiB).
pub const ALLOCATION_BYTES_MAX: usize = 512 << 20;

struct Capped;

#[global_allocator]
static ALLOCATOR: Capped = Capped;

fn refuse() -> ! {
    // No formatting here: it could allocate, inside the allocator.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), b"sleet-fuzz: an allocation past ALLOCATION_BYTES_MAX\n");
    std::process::abort()
}

// SAFETY: every call is passed on to the system allocator unchanged, or aborts.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_BYTES_MAX {
            refuse();
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOCATION_BYTES_MAX {
            refuse();
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOCATION_BYTES_MAX {
            refuse();
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}
