#pragma once

namespace s1::backend::cpu {

// The arithmetic a model runs its matrix products in. Inputs and outputs stay fp32 either way.
enum class Precision {
  fp32,  // AVX-512 FMA
  bf16,  // operands rounded to bf16, products accumulated in fp32 (AMX where available)
};

}  // namespace s1::backend::cpu
