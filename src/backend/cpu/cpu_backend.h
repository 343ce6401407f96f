#pragma once
// The CPU backend: backend.h's ops on the kernels of this folder (variants chosen once from CPUID,
// dispatch.cpp), the ops without a kernel of their own on the reference definitions.

#include <memory>

#include "backend/backend.h"

namespace s1::backend::cpu {

[[nodiscard]] std::unique_ptr<Backend> create_backend();
// x86-64 with or without AVX-512: every class runs, the variants differ.
[[nodiscard]] bool backend_available();

}  // namespace s1::backend::cpu
