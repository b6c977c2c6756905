// Clients that never read, and what they cost pkitd.
//
//   1. One client pipelines `status` requests (50 services, ~50 rows a reply) and never
//      reads, until pkitd stops reading it; then 20 pings from another connection:
//      median and max (was the ctest bound "delays none of 20 pings by 100 ms").
//   2. --clients (100) stalled streaming clients, half `events`, half `logs` with
//      `follow` of a loud service, each with a small receive buffer and never read,
//      beside that service crash-looping at zero backoff (5,000 lines a run) for
//      --seconds (60): pkitd's VmRSS before, at most during, and 10 s after the
//      clients left; ping latency from another connection meanwhile.
//
//   bench_stalled --pkitd PATH [--clients 100] [--seconds 60] [--rcvbuf 4096]

#include <sys/socket.h>
#include <sys/un.h>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// A connection with a `rcvbuf`-byte receive buffer (0: the default) that sent `line`;
// -1 on failure.
int stalled_client(const std::string& socket, const std::string& line, int rcvbuf) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void pipelined_status(const std::string& binary) {
    TempDir dir("pkit-bench-stalled");
    for (int i = 0; i < 50; ++i) {
        dir.write("services/" + service_name(static_cast<std::size_t>(i)) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    print_header("a client pipelining status requests and never reading (50 services)");
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client) || !wait_running(pkitd, client, 50, 30.0)) {
        print_note("pkitd did not start its 50 services within 30 s");
        return;
    }
    int stalled = stalled_client(pkitd.socket_path(), "", 0);
    ::fcntl(stalled, F_SETFL, ::fcntl(stalled, F_GETFL) | O_NONBLOCK);
    const std::string request = "{\"id\": 1, \"cmd\": \"status\"}\n";
    std::string pending;
    long sent = 0;
    bool full = false;
    double until = mono_seconds() + 20.0;
    while (stalled >= 0 && !full && mono_seconds() < until) {
        if (pending.empty()) {
            pending = request;
            ++sent;
        }
        ssize_t n = ::send(stalled, pending.data(), pending.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            pollfd p{stalled, POLLOUT, 0};
            full = ::poll(&p, 1, 500) == 0;  // half a second without room
            continue;
        }
        if (n <= 0) {
            break;
        }
        pending.erase(0, static_cast<std::size_t>(n));
    }
    print_row("status requests sent until pkitd stopped reading", std::to_string(sent), "reqs", "",
              full ? "full" : "never full (20 s)", "");
    Client pinger;
    std::vector<double> latencies;
    long timeouts = 0;
    if (pkitd.connect(pinger)) {
        pinger.request(R"({"id":0,"cmd":"ping"})", 5.0);  // warm
        for (int i = 0; i < 20; ++i) {
            if (!pinger.connected()) {
                pkitd.connect(pinger, 5.0);
            }
            double begin = mono_seconds();
            json reply = pinger.request_json(R"({"id":1,"cmd":"ping"})", 5.0);
            if (reply.is_object() && reply.value("ok", false)) {
                latencies.push_back(mono_seconds() - begin);
            } else {
                ++timeouts;
            }
            sleep_seconds(0.02);
        }
    }
    print_row("20 pings beside it: median / max",
              format_number(median(latencies) * 1e3, 2) + " / " +
                  format_number(percentile(latencies, 1.0) * 1e3, 2),
              "ms", "< 100 ms max", std::to_string(timeouts) + " timeouts (5 s)",
              latencies.empty()                                   ? "no figure"
              : percentile(latencies, 1.0) < 0.1 && timeouts == 0 ? "meets"
                                                                  : "misses");
    if (stalled >= 0) {
        ::close(stalled);
    }
}

void streaming(const std::string& binary, int clients, double seconds, int rcvbuf) {
    TempDir dir("pkit-bench-stalled");
    dir.write("services/loud.toml",
              "command = [\"/bin/sh\", \"-c\", \"seq -f 'loud line %g of a run that will "
              "crash, padded to look like a real log line' 1 5000; exit 1\"]\n"
              "[restart]\npolicy = \"on_crash\"\nbackoff_initial = \"0s\"\njitter = false\n"
              "[output]\nforward = \"none\"\n");
    print_header(std::to_string(clients) + " stalled streaming clients beside a loud crash loop, " +
                 format_number(seconds, 0) + " s");
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client)) {
        print_note("pkitd did not start or answer");
        return;
    }
    sleep_seconds(1.0);
    long rss_before = read_memory(pkitd.pid()).rss_kib;
    std::vector<int> fds;
    for (int i = 0; i < clients; ++i) {
        std::string line = i % 2 == 0 ? "{\"id\":" + std::to_string(i) + ",\"cmd\":\"events\"}\n"
                                      : "{\"id\":" + std::to_string(i) +
                                            ",\"cmd\":\"logs\",\"service\":\"loud\","
                                            "\"follow\":true,\"lines\":0}\n";
        int fd = stalled_client(pkitd.socket_path(), line, rcvbuf);
        if (fd >= 0) {
            fds.push_back(fd);
        }
    }
    PingSampler pings(pkitd.socket_path(), 0.01, 2.0);
    pings.start();
    double begin = mono_seconds();
    long rss_max = rss_before;
    while (mono_seconds() - begin < seconds && pkitd.alive()) {
        rss_max = std::max(rss_max, read_memory(pkitd.pid()).rss_kib);
        sleep_seconds(0.1);
    }
    double end = mono_seconds();
    long runs = -1;
    json services = services_of(client.request_json(R"({"id":1,"cmd":"status"})", 5.0));
    if (!services.empty()) {
        runs = services[0].value("run", -1L);
    }
    for (int fd : fds) {
        ::close(fd);
    }
    double left_at = mono_seconds();
    while (mono_seconds() - left_at < 10.0 && pkitd.alive()) {
        sleep_seconds(0.1);
    }
    long rss_after = read_memory(pkitd.pid()).rss_kib;
    pings.stop();
    bool alive = pkitd.alive();

    print_row("stalled clients connected", std::to_string(fds.size()), "clients",
              std::to_string(clients), "rcvbuf " + std::to_string(rcvbuf), "");
    print_row("pkitd VmRSS before the clients", std::to_string(rss_before), "KiB", "", "", "");
    print_row("pkitd VmRSS max during", std::to_string(rss_max), "KiB", "bounded",
              "+" + std::to_string(rss_max - rss_before) + " KiB", "");
    print_row("pkitd VmRSS 10 s after they left", std::to_string(rss_after), "KiB", "", "",
              alive ? "" : "pkitd died");
    print_row("runs of the loud service in the window", std::to_string(runs), "runs", "", "", "");
    std::vector<double> during;
    long during_timeouts = 0;
    for (const auto& s : pings.samples(begin, end)) {
        if (std::isnan(s.latency)) {
            ++during_timeouts;
        } else {
            during.push_back(s.latency);
        }
    }
    print_row("ping p99 during (2 s timeout each)",
              format_number(percentile(during, 0.99) * 1e3, 2), "ms", "",
              std::to_string(during_timeouts) + " timeouts", during_timeouts > 0 ? "timeouts" : "");
    print_note("pings during the window: " + pings.summary(begin, end));
    print_note("pings after the clients left: " + pings.summary(end, 1e300));
}

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "");
    int clients = static_cast<int>(arg_number(argc, argv, "--clients", 100));
    double seconds = arg_number(argc, argv, "--seconds", 60);
    int rcvbuf = static_cast<int>(arg_number(argc, argv, "--rcvbuf", 4096));
    if (binary.empty()) {
        std::fprintf(stderr,
                     "usage: bench_stalled --pkitd PATH [--clients N] [--seconds S] "
                     "[--rcvbuf BYTES]\n");
        return 2;
    }
    pipelined_status(binary);
    streaming(binary, clients, seconds, rcvbuf);
    return 0;
}
