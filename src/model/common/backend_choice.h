#pragma once
// The backend model code runs on when its caller names none: one per process, the CPU backend
// where this machine runs it, else the reference backend. A later device choice (CUDA, a
// configured backend) replaces this one place.

#include "backend/backend.h"

namespace s1::model {

[[nodiscard]] backend::Backend& default_backend();

}  // namespace s1::model
