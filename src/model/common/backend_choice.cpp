#include "model/common/backend_choice.h"

#include <memory>

namespace s1::model {

backend::Backend& default_backend() {
  // The registry lists the reference backend first and the fastest last.
  static const std::unique_ptr<backend::Backend> chosen = [] {
    std::unique_ptr<backend::Backend> best;
    for (const backend::BackendEntry& entry : backend::backends()) {
      if (entry.available()) best = entry.create();
    }
    return best;
  }();
  return *chosen;
}

}  // namespace s1::model
