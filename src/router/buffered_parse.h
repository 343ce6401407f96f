#pragma once
// Finishing an HTTP message from bytes already read: a small body usually arrives in the same read
// as its header, and another asynchronous read would cost a trip through the event loop (measured:
// each one is a wake-up and an epoll_wait on the proxy's path).

#include "router/socket_io.h"

#include <boost/asio/awaitable.hpp>
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

// Reads until `parser` has a whole header, starting with what `buffer` already holds (a pipelined
// request). Reads of 4 KiB: a small body usually comes along with its header, and the buffer each
// kept-alive connection holds on to stays small.
template <bool is_request, class Body, class Allocator>
boost::asio::awaitable<boost::system::error_code> read_header(boost::asio::ip::tcp::socket& socket,
                                                              boost::beast::flat_buffer& buffer,
                                                              boost::beast::http::parser<is_request, Body, Allocator>& parser,
                                                              Clock::time_point deadline) {
  constexpr size_t read_size = 4 * 1024;
  boost::system::error_code error;
  while (!parser.is_header_done()) {
    if (buffer.size() == 0) {
      error = co_await read_some(socket, buffer, read_size, deadline);
      if (error == boost::asio::error::eof && parser.got_some()) error = boost::beast::http::error::partial_message;
      if (error == boost::asio::error::eof) error = boost::beast::http::error::end_of_stream;
      if (error) co_return error;
    }
    const size_t used = parser.put(buffer.data(), error);
    buffer.consume(used);
    if (error == boost::beast::http::error::need_more) {
      // The partial header stays in the buffer; more of it is read after it.
      error = co_await read_some(socket, buffer, read_size, deadline);
      if (error == boost::asio::error::eof) error = boost::beast::http::error::partial_message;
      if (error) co_return error;
      continue;
    }
    if (error) co_return error;
  }
  co_return error;
}

}  // namespace s1::router
