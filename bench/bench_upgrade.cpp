// Upgrading pkitd in place (SPEC §16) with N `sleep 1000` services (1,000 by default),
// --rounds times on one pkitd, to its own binary:
//   - from the `upgrade` request until the new pkitd answers it (it takes the request's
//     connection over; from an older pkitd, which answers before its exec, until the
//     first ping answered on a connection made after the exec closed that one);
//   - restarts and changed pids over all services, before and after (goal 0);
//   - connections refused to a client that connects and pings in a loop throughout
//     (goal 0);
//   - pkitd's PSS after the upgrades, beside a freshly started pkitd on the same tree.
//
//   bench_upgrade --pkitd PATH [--services 1000] [--rounds 5]

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <thread>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

std::map<std::string, std::pair<long, long>> pids_and_restarts(Client& client) {
    std::map<std::string, std::pair<long, long>> out;
    for (const json& s : services_of(client.request_json(R"({"id":1,"cmd":"status"})", 30.0))) {
        out[s.value("name", "")] = {s.value("pid", json(0)).is_number() ? s["pid"].get<long>() : 0,
                                    s.value("restarts", 0L)};
    }
    return out;
}

// Connects to `path` and pings in a loop until `stop`; counts refused connections.
void probe_loop(const std::string& path, std::atomic<bool>& stop, std::atomic<int>& refused,
                std::atomic<int>& answered) {
    while (!stop) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
        if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            ++refused;
        } else {
            const char ping[] = "{\"id\":1,\"cmd\":\"ping\"}\n";
            char reply[512];
            if (::write(fd, ping, sizeof ping - 1) > 0 && ::read(fd, reply, sizeof reply) > 0) {
                ++answered;
            }
        }
        ::close(fd);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto services = static_cast<std::size_t>(arg_number(argc, argv, "--services", 1000));
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 5));
    if (binary.empty()) {
        std::fprintf(stderr, "usage: bench_upgrade --pkitd PATH [--services N] [--rounds N]\n");
        return 2;
    }
    rlimit raised{65536, 65536};
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
        rlimit limit{};
        ::getrlimit(RLIMIT_NOFILE, &limit);
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    char real[PATH_MAX];
    if (::realpath(binary.c_str(), real) == nullptr) {
        std::fprintf(stderr, "bench_upgrade: %s: not found\n", binary.c_str());
        return 2;
    }
    binary = real;
    print_header("upgrade in place with " + std::to_string(services) + " `sleep 1000` services (" +
                 std::to_string(rounds) + " upgrades)");
    TempDir dir("pkit-bench-upgrade");
    for (std::size_t i = 0; i < services; ++i) {
        dir.write("services/" + service_name(i) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    Pkitd pkitd(binary, dir.path());
    if (!pkitd.start() || !wait_processes(dir.path(), services + 1, 120.0)) {
        print_row("upgrade", "n/a", "ms", "<= 200 ms", "-", "no figure: services did not start");
        return 0;
    }
    Client client;
    pkitd.connect(client);
    auto before = pids_and_restarts(client);
    client.close();

    std::atomic<bool> stop{false};
    std::atomic<int> refused{0};
    std::atomic<int> answered{0};
    std::thread prober(probe_loop, pkitd.socket_path(), std::ref(stop), std::ref(refused),
                       std::ref(answered));
    std::vector<double> took;
    int failed = 0;
    for (int r = 0; r < rounds; ++r) {
        Client request;
        if (!pkitd.connect(request)) {
            ++failed;
            continue;
        }
        double begin = mono_seconds();
        json reply = request.request_json(R"({"id":1,"cmd":"upgrade"})", 60.0);
        if (!reply.is_object() || !reply.value("ok", false)) {
            ++failed;
            continue;
        }
        if (reply["result"].contains("restarted_services")) {
            // The new pkitd answered, on the connection it took over.
            took.push_back(mono_seconds() - begin);
            failed += reply["result"].value("restarted_services", 0) == 0 ? 0 : 1;
            sleep_seconds(0.5);
            continue;
        }
        // An older pkitd: the exec closes the connection; the new one answers the next.
        std::string line;
        while (request.read_line(line, 10.0)) {
        }
        for (;;) {
            Client ping;
            if (pkitd.connect(ping, 10.0) && ping.request(R"({"id":2,"cmd":"ping"})", 10.0)) {
                took.push_back(mono_seconds() - begin);
                break;
            }
            if (mono_seconds() - begin > 30.0) {
                ++failed;
                break;
            }
        }
        sleep_seconds(0.5);
    }
    stop = true;
    prober.join();

    Client after_client;
    pkitd.connect(after_client);
    auto after = pids_and_restarts(after_client);
    int changed = 0;
    long restarts = 0;
    for (const auto& [name, pr] : before) {
        auto it = after.find(name);
        changed += it == after.end() || it->second.first != pr.first ? 1 : 0;
        restarts += it == after.end() ? 0 : it->second.second - pr.second;
    }
    Memory upgraded = read_memory(pkitd.pid());
    pkitd.stop(120.0);

    time_row("upgrade request until the new pkitd answers it", took, 200.0);
    print_row("  upgrades that failed", std::to_string(failed), "", "0", "",
              failed == 0 ? "meets" : "misses");
    print_row("services whose pid changed", std::to_string(changed), "", "0", "",
              changed == 0 ? "meets" : "misses");
    print_row("restarts counted meanwhile", std::to_string(restarts), "", "0", "",
              restarts == 0 ? "meets" : "misses");
    print_row("connections refused to a client connecting throughout",
              std::to_string(refused.load()), "", "0", "", refused == 0 ? "meets" : "misses");
    print_note(std::to_string(answered.load()) + " pings answered meanwhile");

    Pkitd fresh(binary, dir.path());
    Memory fresh_memory;
    if (fresh.start() && wait_processes(dir.path(), services + 1, 120.0)) {
        Client c;
        fresh.connect(c);
        c.request_json(R"({"id":1,"cmd":"status"})", 30.0);  // as the upgraded one served status
        sleep_seconds(1.0);
        fresh_memory = read_memory(fresh.pid());
    }
    fresh.stop(120.0);
    print_row("PSS after the upgrades", format_number(upgraded.pss_kib / 1024.0, 2), "MiB",
              "level with fresh", "", "");
    print_row(
        "PSS of a fresh pkitd, same tree", format_number(fresh_memory.pss_kib / 1024.0, 2), "MiB",
        "",
        "x" + format_number(
                  static_cast<double>(upgraded.pss_kib) / std::max(1L, fresh_memory.pss_kib), 2),
        "");
    return 0;
}
