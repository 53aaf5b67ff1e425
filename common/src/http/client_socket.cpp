// Finding a request's socket by its two addresses, and asking it whether the client hung up.
#include "inferlab/http/client_socket.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace inferlab {

namespace {

// The numeric address and the port of @p addr, as httplib writes a request's addresses.
bool numeric_address(const sockaddr_storage& addr, socklen_t size, std::string& host,
                     int& port) {
  char name[NI_MAXHOST];
  char service[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), size, name, sizeof name, service,
                    sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = name;
  port = std::atoi(service);
  return true;
}

// Whether socket @p fd's end, read by @p get (getsockname or getpeername), is host : port.
template <class Get>
bool end_is(int fd, Get get, const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t size = sizeof addr;
  if (get(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) return false;
  std::string h;
  int p = -1;
  return numeric_address(addr, size, h, p) && p == port && h == host;
}

}  // namespace

int find_client_socket(const std::string& local_addr, int local_port,
                       const std::string& remote_addr, int remote_port) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", error)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
    if (ec != std::errc() || end != name.data() + name.size()) continue;
    // The peer first: it fails at once for anything but a connected socket.
    if (end_is(fd, ::getpeername, remote_addr, remote_port) &&
        end_is(fd, ::getsockname, local_addr, local_port))
      return fd;
  }
  return -1;
}

bool peer_hung_up(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace inferlab
