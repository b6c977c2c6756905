#include "ctl/common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <sys/stat.h>

#include "ctl/client.hpp"
#include "ctl/render.hpp"
#include "proto/socket_path.hpp"
#include "proto/status_rows.hpp"

namespace pkit::ctl {

std::string socket_path(const GlobalOptions& global) {
    if (!global.socket.empty()) {
        return global.socket;
    }
    if (const char* env = std::getenv("PKIT_SOCKET"); env != nullptr && *env != '\0') {
        return env;
    }
    // An unprivileged pkitd falls back to $XDG_RUNTIME_DIR (SPEC §1); follow it there
    // only when the system-wide socket does not exist, so root's pkitd always wins.
    struct stat info {};
    if (::stat(proto::k_default_socket, &info) != 0) {
        if (auto user_socket = proto::runtime_dir_socket();
            user_socket && ::stat(user_socket->c_str(), &info) == 0) {
            return *user_socket;
        }
    }
    return proto::k_default_socket;
}

std::string socket_origin(const GlobalOptions& global) {
    if (!global.socket.empty()) {
        return "--socket";
    }
    if (const char* env = std::getenv("PKIT_SOCKET"); env != nullptr && *env != '\0') {
        return "$PKIT_SOCKET";
    }
    return "the default";
}

std::chrono::milliseconds timeout_of(const GlobalOptions& global) {
    return std::chrono::milliseconds(static_cast<long long>(global.timeout * 1000));
}

proto::json call(const GlobalOptions& global, const proto::Request& request) {
    return call(global, request, timeout_of(global));
}

proto::json call(const GlobalOptions& global, const proto::Request& request,
                 std::chrono::milliseconds reply_timeout) {
    Client client(global, reply_timeout);
    client.send(request);
    return result_of(client.read_reply(), client.path());
}

void print_result_text(const GlobalOptions& global, const proto::Request& request) {
    Client client(global, timeout_of(global));
    client.send(request);
    const std::string line = client.read_reply_line();
    if (auto text = proto::result_text(line)) {
        std::cout << *text << '\n' << std::flush;
        return;
    }
    // An error reply (thrown as call() throws it), or one not as expected.
    print_json(result_of(client.reply_of(line), client.path()));
}

std::vector<proto::ServiceStatus> call_for_rows(const GlobalOptions& global,
                                                const proto::Request& request,
                                                std::chrono::milliseconds reply_timeout) {
    Client client(global, reply_timeout);
    client.send(request);
    const std::string line = client.read_reply_line();
    auto rows = proto::parse_status_rows(line);
    if (rows && *rows) {
        return std::move(**rows);
    }
    if (rows) {
        // Not a result: an error reply, thrown as call() throws it.
        if (auto reply = proto::parse_reply(line)) {
            result_of(std::move(*reply), client.path());
        }
    }
    throw CtlError(k_exit_unreachable, "unexpected reply from " + client.path() + ": " +
                                           (rows ? "no status rows" : rows.error()));
}

std::chrono::milliseconds timeout_for_work(const GlobalOptions& global, double work) {
    if (global.timeout_given) {
        return timeout_of(global);
    }
    constexpr double k_margin = 10.0;  // the default --timeout
    double seconds = std::min(std::max(work, 0.0) + k_margin, 1e9);
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

proto::json result_of(proto::Reply reply, const std::string& path) {
    if (reply.kind == proto::Reply::Kind::error) {
        std::string code(proto::to_string(reply.error.code));
        if (reply.error.code == proto::ErrorCode::invalid_config) {
            // Every problem on a line of its own, FILE:LINE:COLUMN first (SPEC §1).
            throw CtlError(
                k_exit_daemon_error,
                code + ": the configuration is invalid; nothing changed\n" + reply.error.message);
        }
        throw CtlError(k_exit_daemon_error, code + ": " + reply.error.message);
    }
    if (reply.kind != proto::Reply::Kind::result) {
        throw CtlError(k_exit_unreachable, "unexpected stream line from " + path);
    }
    return std::move(reply.body);
}

void print_json(const proto::json& value) {
    std::cout << proto::to_line(value) << std::flush;
}

std::vector<proto::ServiceStatus> services_of(const proto::json& result) {
    return result.at("services").get<std::vector<proto::ServiceStatus>>();
}

int print_services(const GlobalOptions& global, const proto::json& result) {
    if (global.json) {
        print_json(result);
    } else {
        std::cout << render_table(services_of(result), use_color());
    }
    return k_exit_ok;
}

}  // namespace pkit::ctl
