#include "decide/contract_table.h"

#include "decide/contracts/mock.h"

namespace s1::decide {

LoadedModel load_model(const std::string& source) {
  constexpr std::string_view mock_prefix = "mock:";
  if (source.starts_with(mock_prefix)) {
    const std::string variant = source.substr(mock_prefix.size());
    auto engine = make_mock_engine(variant);
    if (!engine) {
      throw ModelLoadError("unknown test backend '" + source +
                           "' (known: mock:ramp, mock:uniform, mock:letters, mock:broken, mock:slow)");
    }
    return LoadedModel{"mock-" + variant, {}, std::move(engine)};
  }
  throw ModelLoadError("cannot load model '" + source + "': native checkpoints are not available in this build yet");
}

}  // namespace s1::decide
