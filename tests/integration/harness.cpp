#include "tests/integration/harness.hpp"

#include <iomanip>
#include <sstream>

namespace pkit::itest {

std::string restart_table(const std::string& policy, const std::string& backoff_initial,
                          double factor, int max_restarts) {
    std::ostringstream out;
    out << "[restart]\npolicy = " << toml_str(policy)
        << "\nbackoff_initial = " << toml_str(backoff_initial)
        << "\nbackoff_factor = " << std::fixed << std::setprecision(2) << factor
        << "\nmax_restarts = " << max_restarts << "\njitter = false\n";
    return out.str();
}

std::size_t widest_line(const std::string& screen) {
    std::size_t widest = 0;
    std::size_t columns = 0;
    for (char c : screen) {
        if (c == '\n') {
            widest = std::max(widest, columns);
            columns = 0;
        } else if (c != '\r' && (static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++columns;
        }
    }
    return std::max(widest, columns);
}

std::string runner_toml(const std::string& seconds) {
    return sh_command("exec sleep " + seconds) + "[stop]\ntimeout = \"1s\"\n";
}

std::string quick_restart_runner_toml(const std::string& seconds) {
    return sh_command("exec sleep " + seconds) +
           "[restart]\njitter = false\nbackoff_initial = \"50ms\"\n[stop]\ntimeout = \"1s\"\n";
}

CommandResult ctl(const Daemon& pkitd, std::vector<std::string> args,
                  std::chrono::milliseconds timeout, const std::vector<std::string>& env) {
    args.insert(args.begin(), {"--socket", pkitd.socket()});
    return run_ctl(args, timeout, env);
}

bool is_event(const json& e, const std::string& type, const std::string& service) {
    return e.value("type", "") == type && e.contains("service") && e["service"] == service;
}

void kill_service(Client& client, const std::string& name) {
    json reply = client.request({{"cmd", "signal"}, {"services", {name}}, {"signal", "KILL"}});
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
}

json wait_running(Client& client, const std::string& name, int run,
                  std::chrono::milliseconds within) {
    return wait_status(
        client, name,
        [run](const json& s) { return s["state"] == "running" && s.value("run", 0) == run; },
        within, name + " running its run " + std::to_string(run));
}

json reload(Client& client) {
    json reply = client.command("reload");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    return reply["result"];
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

std::vector<std::string> nonempty_lines(const std::string& text) {
    std::vector<std::string> out = lines_of(text);
    std::erase(out, std::string());
    return out;
}

int with_http(const TempDir& dir, const std::string& more) {
    const int port = unused_port();
    dir.daemon_config(more + "[http]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
    return port;
}

json last_exit(const json& status) {
    REQUIRE_MESSAGE(status.contains("last_exit"), "no last_exit in " << status.dump());
    REQUIRE_MESSAGE(status["last_exit"].is_object(), "last_exit is null in " << status.dump());
    return status["last_exit"];
}

}  // namespace pkit::itest

namespace pkit::itest {

std::vector<double> exit_to_start_gaps(const std::vector<json>& events,
                                       const std::string& service) {
    std::vector<double> gaps;
    std::optional<double> exited_at;
    for (const auto& e : events) {
        if (is_event(e, "exited", service)) {
            exited_at = e.at("at").get<double>();
        } else if (is_event(e, "started", service) && exited_at) {
            gaps.push_back(e.at("at").get<double>() - *exited_at);
            exited_at.reset();
        }
    }
    return gaps;
}

std::vector<double> restart_delays(const std::vector<json>& events, const std::string& service) {
    std::vector<double> delays;
    for (const auto& e : events) {
        if (is_event(e, "restarting", service)) {
            delays.push_back(e.at("delay").get<double>());
        }
    }
    return delays;
}

std::string to_string(const std::vector<double>& values) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(3) << "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        out << (i == 0 ? "" : ", ") << values[i];
    }
    out << "]";
    return out.str();
}

std::string gate(const TempDir& dir) {
    return "while [ ! -e " + dir.file("go") + " ]; do sleep 0.01; done; ";
}

void open_gate(const TempDir& dir) {
    write_file(dir.path() / "go", "");
}

}  // namespace pkit::itest
