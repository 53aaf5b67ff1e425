#pragma once
/// @file client_socket.hpp
/// @brief Noticing that a client hung up while its request waits, without writing to it.
///
/// A worker thread that waits for the engine writes nothing to its client, so a failed write
/// cannot tell it that the client left. The connection's socket can: once the client's end is
/// closed, the kernel marks the socket (POLLRDHUP for the FIN of an orderly close, POLLHUP or
/// POLLERR for a reset). cpp-httplib 0.11 hands a handler the request's addresses but not its
/// socket, so find_client_socket() looks the socket up by them. Linux only (POLLRDHUP).

#include <string>

namespace inferlab {

/// @brief The descriptor of this process's connected TCP socket whose own end is
/// @p local_addr : @p local_port and whose peer is @p remote_addr : @p remote_port (numeric
/// addresses, as getnameinfo() writes them), or -1 if there is none.
/// @param local_addr the server's address the request arrived at
/// @param local_port the server's port
/// @param remote_addr the client's address
/// @param remote_port the client's port
/// @note Cost: two system calls per descriptor the process holds (a walk of /proc/self/fd).
/// The match is unique while the connection is open: no two open TCP connections have the same
/// two ends.
int find_client_socket(const std::string& local_addr, int local_port,
                       const std::string& remote_addr, int remote_port);

/// @brief Whether the peer of connected socket @p fd has closed its end or reset the
/// connection. Does not wait, reads nothing: data the client sent stays queued.
bool peer_hung_up(int fd);

}  // namespace inferlab
