// Upgrades in place under clients (issue 44): --services `sleep 1000` services and one
// `r` that the clients restart; --clients threads loop `status`, `restart r` and `wait r
// --for ready`, each request on a connection of its own as pkitctl makes them, while the
// main thread upgrades pkitd to its own binary --rounds times, each `upgrade` waiting
// for its answer (from the new pkitd). Figures:
//   - requests that failed: refused, closed without a reply, an error reply, or no reply
//     within 30 s (goal 0), beside those answered;
//   - upgrades that failed, and the time from each `upgrade` request to its answer;
//   - services whose pid changed (goal 0; r, which the clients restart, not counted).
//
//   bench_upgrade_clients --pkitd PATH [--services 20] [--rounds 100] [--clients 4]

#include <atomic>
#include <map>
#include <thread>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

constexpr double k_reply_timeout = 30.0;

std::map<std::string, long> pids(Client& client) {
    std::map<std::string, long> out;
    for (const json& s : services_of(client.request_json(R"({"id":1,"cmd":"status"})", 30.0))) {
        const json pid = s.value("pid", json());
        out[s.value("name", "")] = pid.is_number() ? pid.get<long>() : 0;
    }
    return out;
}

// One request on a connection of its own; empty when answered with ok, else why not.
std::string ask(const std::string& socket, const std::string& request) {
    auto fd = pkit::proto::connect_unix(socket);
    if (!fd) {
        return "connect: " + fd.error().text;
    }
    std::string why;
    if (auto sent = pkit::proto::send_all(*fd, request + "\n"); !sent) {
        why = "send: " + sent.error();
    } else {
        std::string buffer;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        auto read = pkit::proto::read_line(*fd, buffer, deadline);
        if (read.status == pkit::proto::LineRead::line) {
            json reply = json::parse(read.text, nullptr, false);
            if (!reply.is_object() || !reply.value("ok", false)) {
                why = "error reply: " + read.text.substr(0, 200);
            }
        } else if (read.status == pkit::proto::LineRead::eof) {
            why = "closed without a reply";
        } else if (read.status == pkit::proto::LineRead::timeout) {
            why = "no reply within 30 s";
        } else {
            why = "read: " + read.text;
        }
    }
    ::close(*fd);
    return why;
}

struct Tally {
    std::atomic<long> answered{0};
    std::atomic<long> failed{0};
    std::mutex mutex;
    std::map<std::string, long> reasons;
    std::map<std::string, std::vector<double>> seconds;  // per request kind, answered ones

    void count(const std::string& what, const std::string& why, double took) {
        std::lock_guard lock(mutex);
        if (why.empty()) {
            ++answered;
            seconds[what].push_back(took);
            return;
        }
        ++failed;
        ++reasons[what + ": " + why];
    }
};

void client_loop(const std::string& socket, std::atomic<bool>& stop, Tally& tally) {
    const std::vector<std::pair<std::string, std::string>> requests{
        {"status", R"({"id":1,"cmd":"status"})"},
        {"restart", R"({"id":2,"cmd":"restart","services":["r"]})"},
        {"wait", R"({"id":3,"cmd":"wait","services":["r"],"for":"ready","within":30})"},
    };
    while (!stop) {
        for (const auto& [what, line] : requests) {
            double begin = mono_seconds();
            std::string why = ask(socket, line);
            tally.count(what, why, mono_seconds() - begin);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    auto services = static_cast<std::size_t>(arg_number(argc, argv, "--services", 20));
    int rounds = static_cast<int>(arg_number(argc, argv, "--rounds", 100));
    int clients = static_cast<int>(arg_number(argc, argv, "--clients", 4));
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_upgrade_clients --pkitd PATH [--services N] [--rounds N] "
                     "[--clients N]\n");
        return 2;
    }
    char real[PATH_MAX];
    if (::realpath(binary.c_str(), real) == nullptr) {
        std::fprintf(stderr, "bench_upgrade_clients: %s: not found\n", binary.c_str());
        return 2;
    }
    binary = real;
    print_header(std::to_string(rounds) + " upgrades in place under " + std::to_string(clients) +
                 " clients looping status, restart and wait (" + std::to_string(services) +
                 " services)");
    TempDir dir("pkit-bench-upgrade-clients");
    for (std::size_t i = 0; i < services; ++i) {
        dir.write("services/" + service_name(i) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    dir.write("services/r.toml",
              "command = [\"/bin/sleep\", \"1001\"]\n[stop]\ntimeout = \"2s\"\n");
    Pkitd pkitd(binary, dir.path());
    if (!pkitd.start() || !wait_processes(dir.path(), services + 2, 60.0)) {
        print_row("failed requests", "n/a", "", "0", "-", "no figure: services did not start");
        return 0;
    }
    Client client;
    pkitd.connect(client);
    auto before = pids(client);
    client.close();

    std::atomic<bool> stop{false};
    Tally tally;
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back(client_loop, pkitd.socket_path(), std::ref(stop), std::ref(tally));
    }
    const double clients_began = mono_seconds();
    std::vector<double> took;
    int failed = 0;
    std::string first_failure;
    for (int r = 0; r < rounds; ++r) {
        double begin = mono_seconds();
        Client request;
        json reply;
        if (pkitd.connect(request)) {
            reply = request.request_json(R"({"id":1,"cmd":"upgrade"})", k_reply_timeout);
        }
        bool ok = reply.is_object() && reply.value("ok", false) &&
                  reply["result"].value("restarted_services", 0) == 0;
        if (ok && !reply["result"].contains("restarted_services")) {
            // An older pkitd answers before its exec: the new one serves once a ping
            // on a connection of its own is answered.
            std::string line;
            while (request.read_line(line, 10.0)) {
            }
            ok = false;
            while (!ok && mono_seconds() - begin < k_reply_timeout) {
                Client ping;
                ok = pkitd.connect(ping) && ping.request(R"({"id":2,"cmd":"ping"})", 10.0);
            }
        }
        if (!ok) {
            ++failed;
            if (first_failure.empty()) {
                first_failure = reply.dump().substr(0, 300);
            }
            sleep_seconds(0.5);
            continue;
        }
        took.push_back(mono_seconds() - begin);
    }
    stop = true;
    for (std::thread& t : threads) {
        t.join();
    }
    const double clients_ran = mono_seconds() - clients_began;

    Client after_client;
    pkitd.connect(after_client);
    auto after = pids(after_client);
    int changed = 0;
    for (const auto& [name, pid] : before) {
        auto it = after.find(name);
        if (name != "r" && (it == after.end() || it->second != pid || pid == 0)) {
            ++changed;
        }
    }
    pkitd.stop(60.0);

    time_row("upgrade request until the new pkitd answers it", took, 1000.0);
    print_row("upgrades that failed", std::to_string(failed), "", "0", "",
              failed == 0 ? "meets" : "misses");
    if (!first_failure.empty()) {
        print_note("first failed upgrade: " + first_failure);
    }
    print_row("requests that failed", std::to_string(tally.failed.load()), "", "0", "",
              tally.failed == 0 ? "meets" : "misses");
    print_note(std::to_string(tally.answered.load()) + " requests answered in " +
               format_number(clients_ran, 1) + " s");
    for (const auto& [what, seconds] : tally.seconds) {
        print_note(what + ": p50 " + format_number(percentile(seconds, 0.5) * 1000, 1) +
                   " ms, p99 " + format_number(percentile(seconds, 0.99) * 1000, 1) + " ms, max " +
                   format_number(percentile(seconds, 1.0) * 1000, 1) + " ms");
    }
    for (const auto& [why, n] : tally.reasons) {
        print_note(std::to_string(n) + " x " + why);
    }
    print_row("services whose pid changed (r excepted)", std::to_string(changed), "", "0", "",
              changed == 0 ? "meets" : "misses");
    return 0;
}
