#pragma once
// Finishing an HTTP message from bytes already read: a small body usually arrives in the same read
// as its header, and another asynchronous read would cost a trip through the event loop (measured:
// each one is a wake-up and an epoll_wait on the proxy's path).

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

namespace s1::router {

// Feeds `parser` what `buffer` holds. Afterwards either `error` is set (a parse error or the body
// limit), or the message is done, or the buffer is empty and the rest must be read.
template <bool is_request, class Body, class Allocator>
void parse_buffered(boost::beast::http::parser<is_request, Body, Allocator>& parser, boost::beast::flat_buffer& buffer,
                    boost::system::error_code& error) {
  while (!parser.is_done() && buffer.size() > 0) {
    const size_t used = parser.put(buffer.data(), error);
    buffer.consume(used);
    if (error == boost::beast::http::error::need_more) {
      error = {};
      return;
    }
    if (error || used == 0) return;
  }
}

}  // namespace s1::router
