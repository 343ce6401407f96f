// The per-connection arena and the header list: storage reused request after request, a heap
// fallback that never fails, and Beast's parser running on the arena.
#include "router/arena.h"
#include "router/header_list.h"

#include <boost/beast/http.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace s1::router {
namespace {

namespace http = boost::beast::http;

bool aligned(const void* pointer, size_t alignment) { return reinterpret_cast<std::uintptr_t>(pointer) % alignment == 0; }

TEST(Arena, ReusesItsBlockOnceEverythingIsGivenBack) {
  Arena arena(256);
  void* first = arena.allocate(10, 1);
  void* second = arena.allocate(24, 8);
  EXPECT_TRUE(aligned(second, 8));
  EXPECT_EQ(arena.live(), 2u);
  arena.deallocate(first, 10, 1);
  void* third = arena.allocate(8, 8);  // one still live: the block is not reused yet
  EXPECT_NE(third, first);
  arena.deallocate(second, 24, 8);
  arena.deallocate(third, 8, 8);
  EXPECT_EQ(arena.live(), 0u);
  EXPECT_EQ(arena.allocate(10, 1), first);  // from the start again
}

TEST(Arena, FallsBackToTheHeapWhenFull) {
  Arena arena(64);
  void* inside = arena.allocate(60, 1);
  void* outside = arena.allocate(100, 16);  // does not fit: the heap
  EXPECT_TRUE(aligned(outside, 16));
  EXPECT_EQ(arena.live(), 1u);
  std::fill_n(static_cast<char*>(outside), 100, 'x');
  arena.deallocate(outside, 100, 16);
  arena.deallocate(inside, 60, 1);
  EXPECT_EQ(arena.live(), 0u);
}

TEST(Arena, ServesBeastsParserFieldsRequestAfterRequest) {
  Arena arena;
  const std::string wire =
      "POST /v1/systemone?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nX-Long: " +
      std::string(300, 'v') + "\r\nContent-Length: 2\r\n\r\n{}";
  for (int round = 0; round < 3; ++round) {
    {
      http::request_parser<http::string_body, ArenaAllocator<char>> parser(
          std::piecewise_construct, std::make_tuple(), std::make_tuple(ArenaAllocator<char>(arena)));
      boost::beast::error_code error;
      parser.put(boost::asio::buffer(wire), error);
      if (!error && !parser.is_done()) {
        const size_t header = wire.find("\r\n\r\n") + 4;
        parser.put(boost::asio::buffer(wire.data() + header, wire.size() - header), error);
      }
      ASSERT_FALSE(error) << error.message();
      ASSERT_TRUE(parser.is_done());
      auto request = parser.release();
      EXPECT_EQ(request["X-Long"], std::string(300, 'v'));
      EXPECT_EQ(request.body(), "{}");
      EXPECT_GT(arena.live(), 0u);
    }
    EXPECT_EQ(arena.live(), 0u);
  }
}

TEST(ArenaAllocator, WithoutAnArenaUsesTheHeap) {
  std::vector<int, ArenaAllocator<int>> numbers;
  numbers.assign(1000, 7);
  EXPECT_EQ(numbers[999], 7);
  Arena arena;
  EXPECT_FALSE(ArenaAllocator<int>() == ArenaAllocator<int>(arena));
  EXPECT_TRUE(ArenaAllocator<char>(arena) == ArenaAllocator<int>(arena));
}

TEST(HeaderList, KeepsItsStringsStorageWhenCleared) {
  HeaderList headers;
  headers.add("Content-Type", "application/json; charset=utf-8");
  headers.add("X-Worker", "w");
  const char* value_storage = headers.begin()->second.data();
  headers.clear();
  EXPECT_TRUE(headers.empty());
  headers.add("Content-Type", "application/json");
  EXPECT_EQ(headers.begin()->second.data(), value_storage);
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers.fields()[0], (api::Header{"Content-Type", "application/json"}));

  HeaderList moved = std::move(headers);
  EXPECT_EQ(moved.size(), 1u);
  EXPECT_TRUE(headers.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty and usable
  headers.add("A", "b");
  EXPECT_EQ(headers.size(), 1u);
}

}  // namespace
}  // namespace s1::router
