#pragma once
/// @file huge_pages.hpp
/// @brief Transparent huge pages for large, streamed buffers (packed weights, the bandwidth
/// probe).
///
/// A read that streams through hundreds of megabytes crosses a 4 KiB page every 1,024 floats:
/// each crossing costs a TLB miss, and the hardware prefetcher stops at page boundaries. Backed
/// by 2 MiB pages, the same stream ran 10-15 % faster on one Zen 3 core (20-23 against 17-21
/// GB/s). Linux gives huge pages to memory marked with madvise(MADV_HUGEPAGE) when
/// /sys/kernel/mm/transparent_hugepage/enabled says "madvise" (a common default), to all
/// anonymous memory when it says "always", and never when it says "never".

#include <cstddef>

namespace inferlab::kernels {

/// @brief The huge page size these helpers align to: 2 MiB.
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// @brief Asks the OS to back the whole 2 MiB pages inside [@p p, @p p + @p bytes) with huge
/// pages. Call it before the memory is first written (the pages are chosen when they are
/// first touched). Only whole pages inside the range are marked, so no byte outside it becomes
/// resident. A hint: does nothing on other systems, and a refusal is not an error.
void advise_huge_pages(void* p, std::size_t bytes);

}  // namespace inferlab::kernels
