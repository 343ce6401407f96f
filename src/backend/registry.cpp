// The one table of backends compiled into this binary. A backend added later (CUDA) joins with a
// row here; the op test (tests/unit/backend/ops_test.cpp) then runs every op case on it.

#include <array>
#include <stdexcept>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference.h"

namespace s1::backend {
namespace {

bool always() { return true; }

constexpr std::array<BackendEntry, 2> table{{
    {"reference", "every op written out plainly, serially, summing in double (the definition)", &always,
     &reference::create},
    {"cpu", "the CPU kernels: AVX-512, AVX512-BF16 and AMX variants chosen from CPUID, oneDNN matmuls",
     &cpu::backend_available, &cpu::create_backend},
}};

}  // namespace

std::span<const BackendEntry> backends() { return table; }

std::unique_ptr<Backend> create_backend(std::string_view name) {
  std::string known;
  for (const BackendEntry& entry : table) {
    if (entry.name == name) return entry.create();
    known += (known.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw std::invalid_argument("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace s1::backend
