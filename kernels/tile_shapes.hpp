// Tile shapes the device bodies are compiled for, visible to the host lowering (plain C++).
#pragma once

namespace gridflow::kernels {

// Items per thread of a whole-range scan tile for a block size: the register tile and its transpose in shared
// memory stay within 48 KB of static shared memory. A scan_all tile holds threads * scan_items_for(threads).
constexpr int scan_items_for(int threads) { return threads >= 1024 ? 8 : 16; }

} // namespace gridflow::kernels
