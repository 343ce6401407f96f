#pragma once
// The contract's deterministic test backends (§8.1). They exist to test the server — admission,
// deadlines, answer maths, serialisation — and are served only when named explicitly (mock:NAME).

#include "runtime/engine.h"

#include <memory>
#include <optional>
#include <string_view>

namespace s1::decide {

// "ramp", "uniform", "letters", "images", "broken" or "slow"; nullptr for any other name.
std::unique_ptr<runtime::Engine> make_mock_engine(std::string_view variant);

}  // namespace s1::decide
