// libFuzzer target for the preprocessor_config.json reader: any bytes must give either a config whose
// pixel budget smart_resize can use (or refuse with a PreprocessError) or a LoadError, never a crash or
// sanitizer report.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "vision/preprocess.h"
#include "vision/preprocessor_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::ordered_json root = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return 0;
  try {
    const s1::vision::PreprocessorConfig config =
        s1::vision::read_preprocessor_config(s1::checkpoint::ConfigReader(root, "fuzz.json"));
    if (config.min_pixels < 1 || config.max_pixels < config.min_pixels || config.patch_size < 1 ||
        config.merge_size < 1 || config.temporal_patch_size < 1) {
      std::abort();
    }
    if (config.patch_size <= 1024 && config.merge_size <= 1024) {
      for (const auto& [height, width] : {std::pair<int64_t, int64_t>{1, 1}, {37, 4000}, {3000, 2000}}) {
        (void)s1::vision::smart_resize(height, width, config.patch_size * config.merge_size, config.min_pixels,
                                       config.max_pixels);
      }
    }
  } catch (const s1::checkpoint::LoadError&) {
  } catch (const s1::vision::PreprocessError&) {
  }
  return 0;
}
