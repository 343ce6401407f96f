#pragma once
// Checkpoint tensors as backend tensors, keeping their dtype where a backend op takes it.

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"

namespace s1::model {

// F32 and BF16 as a read-only view into the checkpoint's mapping (valid while the Checkpoint lives:
// for packing, which does not keep it); F16 widened to an owned fp32 copy, since no op takes f16.
// Any other dtype, or a rank above backend::max_rank, is a checkpoint::LoadError naming the tensor.
[[nodiscard]] backend::Tensor checkpoint_tensor(const checkpoint::TensorView& tensor);

// A small parameter (a norm's weight or bias) as an owned fp32 tensor, the dtype norms take.
[[nodiscard]] backend::Tensor fp32_tensor(const checkpoint::TensorView& tensor);

}  // namespace s1::model
