#pragma once
// Finishing an HTTP message from bytes already read: a small body usually arrives in the same read
// as its header, and another asynchronous read would cost a trip through the event loop (measured:
// each one is a wake-up and an epoll_wait on the proxy's path).

#include "router/socket_io.h"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include <optional>

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

// Header reads of 4 KiB: a small body usually comes along with its header, and the buffer each
// kept-alive connection holds on to stays small.
inline constexpr size_t header_read_size = 4 * 1024;

// What a failed read means for a header: its stream's end before any byte of it is end_of_stream,
// within it partial_message.
template <bool is_request, class Body, class Allocator>
boost::system::error_code header_read_failure(const boost::system::error_code& error,
                                              const boost::beast::http::parser<is_request, Body, Allocator>& parser,
                                              const boost::beast::flat_buffer& buffer) {
  if (error != boost::asio::error::eof) return error;
  return parser.got_some() || buffer.size() > 0 ? boost::beast::http::error::partial_message
                                                : boost::beast::http::error::end_of_stream;
}

// Feeds `parser` the header `buffer` holds (a pipelined request's) and, while that is not enough,
// what the socket has at once: the outcome when the header is whole or failed, nullopt when its
// rest has yet to arrive (then read_some and header_after_read). A plain call: a header already there costs no
// coroutine frame (a malloc each in Asio 1.74).
template <bool is_request, class Body, class Allocator>
std::optional<boost::system::error_code> header_now(boost::asio::ip::tcp::socket& socket,
                                                    boost::beast::flat_buffer& buffer,
                                                    boost::beast::http::parser<is_request, Body, Allocator>& parser) {
  boost::system::error_code error;
  while (!parser.is_header_done()) {
    if (buffer.size() > 0) {
      const size_t used = parser.put(buffer.data(), error);
      buffer.consume(used);
      if (error != boost::beast::http::error::need_more) {
        if (error) return error;
        continue;
      }
      error = {};  // the partial header stays in the buffer; more of it is read after it
    }
    const std::optional<boost::system::error_code> read = read_now(socket, buffer, header_read_size);
    if (!read) return std::nullopt;
    if (*read) return header_read_failure(*read, parser, buffer);
  }
  return error;
}

// header_now after a read that header_now's nullopt called for (started with FirstRead::after_event
// right after it, before this thread's event loop ran again: the socket was just seen empty): the
// read's failure, or header_now's outcome with what it brought. A plain call, so that the caller's
// own frame waits.
template <bool is_request, class Body, class Allocator>
std::optional<boost::system::error_code> header_after_read(const boost::system::error_code& read_error,
                                                           boost::asio::ip::tcp::socket& socket,
                                                           boost::beast::flat_buffer& buffer,
                                                           boost::beast::http::parser<is_request, Body, Allocator>& parser) {
  if (read_error) return header_read_failure(read_error, parser, buffer);
  return header_now(socket, buffer, parser);
}

}  // namespace s1::router
