#pragma once
// Header fields in order, whose strings keep their storage when the list is cleared: a list kept
// per connection and refilled request after request stops allocating once it has held the largest
// set (a vector's clear() would free every name and value).

#include "api/errors.h"

#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace s1::router {

class HeaderList {
 public:
  HeaderList() = default;
  HeaderList(HeaderList&& other) noexcept : fields_(std::move(other.fields_)), size_(std::exchange(other.size_, 0)) {}
  HeaderList& operator=(HeaderList&& other) noexcept {
    fields_ = std::move(other.fields_);
    size_ = std::exchange(other.size_, 0);
    other.fields_.clear();
    return *this;
  }
  HeaderList(const HeaderList&) = default;
  HeaderList& operator=(const HeaderList&) = default;

  void clear() { size_ = 0; }
  void add(std::string_view name, std::string_view value) {
    if (size_ == fields_.size()) fields_.emplace_back();
    fields_[size_].first.assign(name);
    fields_[size_].second.assign(value);
    ++size_;
  }
  std::span<const api::Header> fields() const { return {fields_.data(), size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const api::Header* begin() const { return fields_.data(); }
  const api::Header* end() const { return fields_.data() + size_; }

 private:
  std::vector<api::Header> fields_;
  size_t size_ = 0;
};

}  // namespace s1::router
