#include "api/server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace tabletfs::api {
namespace {

Result<std::string> ReadWhole(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(std::string("cannot read the ") + what, path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(s.find_last_not_of(ws) + 1);
  s.erase(0, s.find_first_not_of(ws));
  return s;
}

// Checks `authorization: Bearer TOKEN` on every call (TLS only).
class TokenChecker : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenChecker(std::string token)
      : expected_("Bearer " + std::move(token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& auth_metadata,
                       grpc::AuthContext*, OutputMetadata* consumed,
                       OutputMetadata*) override {
    auto it = auth_metadata.find("authorization");
    if (it == auth_metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "no authorization: Bearer TOKEN");
    }
    const std::string got(it->second.data(), it->second.size());
    if (got.size() != expected_.size() ||
        !ConstantTimeEqual(got, expected_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "the access token is not the server's");
    }
    consumed->insert({std::string(it->first.data(), it->first.size()), got});
    return grpc::Status::OK;
  }

 private:
  static bool ConstantTimeEqual(const std::string& a, const std::string& b) {
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); i++) diff |= a[i] ^ b[i];
    return diff == 0;
  }

  std::string expected_;
};

}  // namespace

bool IsLoopback(std::string_view host_port) {
  std::string_view host = host_port;
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    host = host.substr(1, close == std::string_view::npos ? 0 : close - 1);
  } else {
    size_t colon = host.rfind(':');
    if (colon != std::string_view::npos) host = host.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

Result<std::unique_ptr<ApiServer>> ApiServer::Start(Bigtable* store,
                                                    const ApiOptions& options) {
  auto log = [&](LogLevel level, const std::string& line) {
    if (options.logger) options.logger(level, line);
  };
  if (options.max_queued_changes == 0) {
    return Status::InvalidArgument("max_queued_changes must be at least 1");
  }
  std::unique_ptr<ApiServer> server(new ApiServer());
  server->context_.store = store;
  server->context_.max_queued_changes = options.max_queued_changes;
  server->data_ = std::make_unique<DataService>(&server->context_);
  server->admin_ = std::make_unique<TableAdminService>(&server->context_);

  grpc::ServerBuilder builder;
  // Cells up to the store's 64 MiB limit arrive in one MutateRow.
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.RegisterService(server->data_.get());
  builder.RegisterService(server->admin_.get());
  if (!options.unix_socket.empty()) {
    ::unlink(options.unix_socket.c_str());
    builder.AddListeningPort("unix:" + options.unix_socket,
                             grpc::InsecureServerCredentials());
  }
  int port = 0;
  if (!options.tcp_address.empty()) {
    const bool tls = !options.tls_cert_file.empty() ||
                     !options.tls_key_file.empty();
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (tls || !IsLoopback(options.tcp_address)) {
      if (options.tls_cert_file.empty() || options.tls_key_file.empty() ||
          options.token_file.empty()) {
        return Status::InvalidArgument(
            "bigtable_api=" + options.tcp_address +
            " is not a loopback address: it needs bigtable_api_tls_cert=, "
            "bigtable_api_tls_key= and bigtable_api_token_file=");
      }
      TABLETFS_ASSIGN_OR_RETURN(std::string cert,
                                ReadWhole(options.tls_cert_file, "TLS certificate"));
      TABLETFS_ASSIGN_OR_RETURN(std::string key,
                                ReadWhole(options.tls_key_file, "TLS key"));
      TABLETFS_ASSIGN_OR_RETURN(std::string token,
                                ReadWhole(options.token_file, "token file"));
      token = Trim(std::move(token));
      if (token.empty()) {
        return Status::InvalidArgument("the token file is empty",
                                       options.token_file);
      }
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back({key, cert});
      creds = grpc::SslServerCredentials(ssl);
      creds->SetAuthMetadataProcessor(
          std::make_shared<TokenChecker>(std::move(token)));
    } else {
      creds = grpc::InsecureServerCredentials();
    }
    builder.AddListeningPort(options.tcp_address, creds, &port);
  }
  // The socket is born 0600: no other user may connect in the moment
  // before a chmod could run.
  const mode_t old_mask = ::umask(0177);
  server->server_ = builder.BuildAndStart();
  ::umask(old_mask);
  if (server->server_ == nullptr ||
      (!options.tcp_address.empty() && port == 0)) {
    return Status::IOError("cannot listen for the Bigtable API",
                           options.tcp_address.empty() ? options.unix_socket
                                                       : options.tcp_address);
  }
  if (!options.unix_socket.empty()) {
    ::chmod(options.unix_socket.c_str(), 0600);
    server->unix_socket_ = options.unix_socket;
    log(LogLevel::kInfo, "Bigtable API on unix:" + options.unix_socket);
  }
  server->tcp_port_ = port;
  if (port != 0) {
    log(LogLevel::kInfo,
        "Bigtable API on " + options.tcp_address + " (port " +
            std::to_string(port) + ")");
  }
  return server;
}

void ApiServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  context_.stopping = true;
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    server_->Wait();
  }
  if (!unix_socket_.empty()) ::unlink(unix_socket_.c_str());
}

ApiServer::~ApiServer() { Shutdown(); }

}  // namespace tabletfs::api
