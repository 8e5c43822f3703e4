#include <cstring>
#include <stdexcept>

#include "kernels/engram/engram_gather.h"

namespace v41sim::kernels {

std::vector<uint8_t> engram_gather_reference(const std::vector<uint8_t>& table,
                                             const std::vector<int64_t>& rows) {
  const auto table_rows = static_cast<int64_t>(table.size() / kEngramRowBytes);
  std::vector<uint8_t> out(rows.size() * kEngramRowBytes);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= table_rows) throw std::out_of_range("engram gather: row out of range");
    std::memcpy(out.data() + i * kEngramRowBytes, table.data() + rows[i] * kEngramRowBytes, kEngramRowBytes);
  }
  return out;
}

}  // namespace v41sim::kernels
