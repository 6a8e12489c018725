// ApiServer: serves the Cloud Bigtable v2 API (api/services.h) over one
// store, on a Unix socket and/or a TCP address.
//
// Security rules (docs/API.md): a Unix socket is made mode 0600 (only the
// daemon's user); a TCP address on loopback needs nothing more; any other
// address is refused unless TLS (a certificate and key) and a token file
// are given, and then every call must carry `authorization: Bearer TOKEN`
// (UNAUTHENTICATED otherwise).
//
// Thread safety: Start and Shutdown from one thread; gRPC runs the calls
// on its own threads.
#ifndef TABLETFS_API_SERVER_H_
#define TABLETFS_API_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/services.h"
#include "store/bigtable.h"
#include "store/options.h"

namespace tabletfs::api {

struct ApiOptions {
  // Path of a Unix socket to listen on (replaced if it exists); empty:
  // none.
  std::string unix_socket;
  // HOST:PORT to listen on over TCP (port 0: any free one); empty: none.
  std::string tcp_address;
  // PEM files for TLS; with a non-loopback tcp_address all three are
  // required.
  std::string tls_cert_file;
  std::string tls_key_file;
  // A file holding the access token (surrounding whitespace ignored).
  std::string token_file;
  std::function<void(LogLevel, std::string_view)> logger;
  // The change events a ReadChangeStream holds while its client does not
  // read (each about 100 bytes and the key): when they overflow, the
  // stream ends with ABORTED, and writers never wait for a reader.
  size_t max_queued_changes = 65536;
};

// Whether HOST of HOST:PORT is a loopback address (127.0.0.0/8, ::1,
// localhost).
bool IsLoopback(std::string_view host_port);

class ApiServer {
 public:
  // Starts serving `store` (not owned; must outlive the server).
  // InvalidArgument for a refused address or missing TLS files, IOError
  // when it cannot listen.
  static Result<std::unique_ptr<ApiServer>> Start(Bigtable* store,
                                                  const ApiOptions& options);
  ~ApiServer();  // Shutdown()

  // The TCP port it listens on (0: none).
  int tcp_port() const { return tcp_port_; }

  // New calls get UNAVAILABLE; calls in flight get a moment to finish and
  // are then cancelled. Idempotent.
  void Shutdown();

 private:
  ApiServer() = default;

  ServiceContext context_;
  std::unique_ptr<DataService> data_;
  std::unique_ptr<TableAdminService> admin_;
  std::unique_ptr<grpc::Server> server_;
  std::string unix_socket_;
  int tcp_port_ = 0;
  bool shut_down_ = false;
};

}  // namespace tabletfs::api

#endif  // TABLETFS_API_SERVER_H_
