// Attacks on the HTTP endpoint (SPEC §11, pkitd(8) "The HTTP endpoint") that any client
// on the network can make, with what they do to pkitd meanwhile: a fresh-connection
// `GET /healthz` probe every 100 ms (1 s client timeout: a timeout is what makes an
// orchestrator restart the container), `pkitctl status` every 200 ms, and pkitd's RSS
// every 100 ms. pkitd runs --services `sleep 1000` services with [http] on a free
// 127.0.0.1 port. The attacks, each for --seconds:
//   slowloris  --connections (1000) clients, each sending a request head one byte every
//              --interval (3) seconds; a closed one comes back after 1 s
//   idle       --connections (5000) clients that connect and send nothing; likewise
//   pipelined  --connections (64) clients, each pipelining --requests (50000)
//              `GET /metrics` and never reading; a closed one comes back after 1 s
//   scrapers   --connections (200) clients scraping /metrics in a loop, a connection
//              a scrape, reading every body
//   slow-scrapers  the same, but each pauses --pause (0.3) seconds after sending its
//              request before it reads, and counts the bodies cut short of their
//              Content-Length
// Goals (issue figures): pipelined RSS <= 64 MiB, probe p99 <= 100 ms; slowloris and
// idle: no probe timeout; scrapers at 1,000 services: status p99 <= 50 ms, RSS <= 64 MiB;
// slow-scrapers at 1,000 services: 0 bodies cut, probe p99 <= 100 ms, RSS <= 64 MiB.
//
//   bench_http_attack --pkitd PATH --pkitctl PATH --attack NAME [--services N]
//                     [--connections N] [--seconds 30] [--interval 3] [--requests 50000]
//                     [--pause 0.3]

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <map>

#include "bench/bench_util.hpp"

namespace {

using namespace pkit::bench;

// A non-blocking connection to 127.0.0.1:port under way, or -1.
int connect_to(int port, int rcvbuf = 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
        errno != EINPROGRESS) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// One `GET path` on a fresh connection within `timeout` seconds: the seconds it took,
// or nullopt (a timeout or a failure).
// `why`, when given, gets what went wrong when no 200 came: a timeout (before or after
// the request went), or the connection closed (reset) before a reply.
std::optional<double> timed_get(int port, const std::string& path, double timeout,
                                std::string* why = nullptr) {
    double begin = mono_seconds();
    int fd = connect_to(port);
    if (fd < 0) {
        if (why != nullptr) {
            *why = "no socket";
        }
        return std::nullopt;
    }
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
    bool sent = false;
    std::string reply;
    char buffer[4096];
    while (mono_seconds() - begin < timeout) {
        pollfd p{fd, static_cast<short>(sent ? POLLIN : POLLOUT), 0};
        int left = static_cast<int>((timeout - (mono_seconds() - begin)) * 1000) + 1;
        if (::poll(&p, 1, left) <= 0) {
            continue;
        }
        if (!sent) {
            sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
                   static_cast<ssize_t>(request.size());
            if (!sent) {
                break;
            }
            continue;
        }
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
            if (why != nullptr && reply.empty()) {
                *why = n == 0 ? "closed before a reply"
                              : std::string("reset before a reply: ") + std::strerror(errno);
            }
            break;
        }
        reply.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (reply.rfind("HTTP/1.1 200", 0) != 0) {
        if (why != nullptr && why->empty()) {
            *why = !sent           ? "timed out connecting"
                   : reply.empty() ? "timed out, request sent"
                                   : "no 200";
        }
        return std::nullopt;
    }
    return mono_seconds() - begin;
}

long rss_kb(pid_t pid) {
    return proc_field(read_text("/proc/" + std::to_string(pid) + "/status"), "VmRSS:");
}

struct Attacker {
    int port = 0;
    std::string attack;
    std::size_t connections = 0;
    double interval = 3.0;
    long requests = 50000;
    double pause = 0.3;  // slow-scrapers: before reading
    // Per connection: fd (-1: down), when to act next, progress.
    struct Conn {
        int fd = -1;
        double next = 0;
        std::size_t sent = 0;
        std::string reply;     // scrapers: what came back (its head, for slow-scrapers)
        std::size_t body = 0;  // slow-scrapers: body bytes read
        std::optional<std::size_t> length;  // and the head's Content-Length
    };
    std::vector<Conn> conns;
    long closed_by_pkitd = 0;
    long scrapes = 0;
    long cut = 0;  // slow-scrapers: 200 replies whose body ended short
    std::string head = "GET /healthz HTTP/1.1\r\nHost: b\r\nX-Slow: ";
    std::string burst;

    void run(std::atomic<bool>& stop) {
        conns.resize(connections);
        const std::string one = "GET /metrics HTTP/1.1\r\nHost: b\r\n\r\n";
        for (int i = 0; i < 1000; ++i) {
            burst += one;
        }
        const int rcvbuf = attack == "pipelined" ? 4096 : 0;
        std::vector<pollfd> polls;
        std::vector<std::size_t> index;
        char buffer[65536];
        while (!stop) {
            double now = mono_seconds();
            polls.clear();
            index.clear();
            for (std::size_t i = 0; i < conns.size(); ++i) {
                Conn& c = conns[i];
                if (c.fd < 0) {
                    if (now >= c.next) {
                        c.fd = connect_to(port, rcvbuf);
                        c.sent = 0;
                        c.reply.clear();
                        c.next = now + (attack == "slowloris" ? interval : 0);
                    }
                    if (c.fd < 0) {
                        continue;
                    }
                }
                short events = POLLRDHUP;
                if (attack == "slow-scrapers") {
                    if (c.sent == 0) {
                        events |= POLLOUT;
                    } else if (now >= c.next) {
                        events |= POLLIN;
                    } else {
                        events = 0;  // pausing: not even its end is looked at yet
                    }
                } else if (attack == "scrapers") {
                    events |= c.sent == 0 ? POLLOUT : POLLIN;
                } else if (attack == "pipelined") {
                    if (c.sent < static_cast<std::size_t>(requests) * one.size()) {
                        events |= POLLOUT;
                    }
                } else if (attack == "slowloris" && now >= c.next) {
                    events |= POLLOUT;
                }
                polls.push_back({c.fd, events, 0});
                index.push_back(i);
            }
            if (::poll(polls.data(), polls.size(), 50) <= 0) {
                continue;
            }
            now = mono_seconds();
            for (std::size_t k = 0; k < polls.size(); ++k) {
                Conn& c = conns[index[k]];
                short rev = polls[k].revents;
                auto drop = [&](bool by_pkitd) {
                    ::close(c.fd);
                    c.fd = -1;
                    c.next = now + (attack == "scrapers" || attack == "slow-scrapers" ? 0 : 1.0);
                    closed_by_pkitd += by_pkitd ? 1 : 0;
                };
                if (attack == "slow-scrapers") {
                    if ((rev & POLLOUT) && c.sent == 0) {
                        const char req[] =
                            "GET /metrics HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
                        if (::send(c.fd, req, sizeof req - 1, MSG_NOSIGNAL) > 0) {
                            c.sent = 1;
                            c.next = now + pause;
                            c.body = 0;
                            c.length.reset();
                        } else {
                            drop(true);
                        }
                        continue;
                    }
                    if (rev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
                        ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
                        if (n > 0) {
                            take_reply(c, buffer, static_cast<std::size_t>(n));
                            continue;
                        }
                        if (!c.reply.starts_with("HTTP/1.1 200") || !c.length) {
                            drop(true);
                        } else if (c.body == *c.length) {
                            ++scrapes;
                            drop(false);
                        } else {
                            ++cut;
                            drop(true);
                        }
                    }
                    continue;
                }
                if (attack == "scrapers") {
                    if ((rev & POLLOUT) && c.sent == 0) {
                        const char req[] =
                            "GET /metrics HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
                        if (::send(c.fd, req, sizeof req - 1, MSG_NOSIGNAL) > 0) {
                            c.sent = 1;
                        } else {
                            drop(true);
                        }
                        continue;
                    }
                    if (rev & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
                        ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
                        if (n > 0) {
                            c.reply.append(buffer, std::min<std::size_t>(64, n));
                            continue;
                        }
                        if (c.reply.rfind("HTTP/1.1 200", 0) == 0) {
                            ++scrapes;
                            drop(false);
                        } else {
                            drop(true);
                        }
                    }
                    continue;
                }
                if (rev & (POLLRDHUP | POLLHUP | POLLERR)) {
                    drop(true);
                    continue;
                }
                if ((rev & POLLOUT) && attack == "pipelined") {
                    std::size_t at = c.sent % burst.size();
                    ssize_t n = ::send(c.fd, burst.data() + at, burst.size() - at, MSG_NOSIGNAL);
                    if (n > 0) {
                        c.sent += static_cast<std::size_t>(n);
                    } else if (n < 0 && errno != EAGAIN) {
                        drop(true);
                    }
                } else if ((rev & POLLOUT) && attack == "slowloris") {
                    char byte = c.sent < head.size() ? head[c.sent] : 'a';
                    if (::send(c.fd, &byte, 1, MSG_NOSIGNAL) == 1) {
                        ++c.sent;
                        c.next = now + interval;
                    } else {
                        drop(true);
                    }
                }
            }
        }
        for (Conn& c : conns) {
            if (c.fd >= 0) {
                ::close(c.fd);
            }
        }
    }

    // slow-scrapers: the head kept until complete (its Content-Length read), then the
    // body's bytes counted.
    static void take_reply(Conn& c, const char* bytes, std::size_t n) {
        if (c.length) {
            c.body += n;
            return;
        }
        c.reply.append(bytes, n);
        const std::size_t end = c.reply.find("\r\n\r\n");
        if (end == std::string::npos) {
            return;
        }
        const std::size_t at = c.reply.find("Content-Length: ");
        c.length = at != std::string::npos && at < end
                       ? std::strtoul(c.reply.c_str() + at + 16, nullptr, 10)
                       : 0;
        c.body = c.reply.size() - end - 4;
        c.reply.resize(end);
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::string binary = arg(argc, argv, "--pkitd", "build/daemon/pkitd");
    std::string pkitctl = arg(argc, argv, "--pkitctl", "build/ctl/pkitctl");
    std::string attack = arg(argc, argv, "--attack", "slowloris");
    const bool scraping = attack == "scrapers" || attack == "slow-scrapers";
    double defaults_conn = attack == "idle"        ? 5000
                           : attack == "pipelined" ? 64
                           : scraping              ? 200
                                                   : 1000;
    auto connections =
        static_cast<std::size_t>(arg_number(argc, argv, "--connections", defaults_conn));
    auto services =
        static_cast<std::size_t>(arg_number(argc, argv, "--services", scraping ? 1000 : 50));
    double seconds = arg_number(argc, argv, "--seconds", 30);
    double interval = arg_number(argc, argv, "--interval", 3);
    long requests = static_cast<long>(arg_number(argc, argv, "--requests", 50000));
    double pause = arg_number(argc, argv, "--pause", 0.3);
    if (attack != "slowloris" && attack != "idle" && attack != "pipelined" && !scraping) {
        std::fprintf(stderr,
                     "bench_http_attack: --attack slowloris|idle|pipelined|scrapers|"
                     "slow-scrapers\n");
        return 2;
    }
    // Thousands of sockets: the hard limit, not the soft one.
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }

    print_header("HTTP attack \"" + attack + "\": " + std::to_string(connections) +
                 " connections for " + format_number(seconds, 0) + " s beside " +
                 std::to_string(services) + " `sleep 1000` services (fd limit " +
                 std::to_string(files.rlim_cur) + ")");
    TempDir dir("pkit-bench-http");
    int port = free_port();
    dir.write("pkitd.toml", "[http]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
    for (std::size_t i = 0; i < services; ++i) {
        dir.write("services/" + service_name(i) + ".toml",
                  "command = [\"/bin/sleep\", \"1000\"]\n");
    }
    Pkitd pkitd(binary, dir.path());
    Client client;
    if (!pkitd.start() || !pkitd.connect(client, 30.0) ||
        !wait_running(pkitd, client, services, 180.0)) {
        print_note("pkitd did not get all services running; no figures");
        return 0;
    }
    const long rss_before = rss_kb(pkitd.pid());
    const double cpu_before = cpu_seconds(pkitd.pid());

    std::atomic<bool> stop{false};
    Attacker attacker;
    attacker.port = port;
    attacker.attack = attack;
    attacker.connections = connections;
    attacker.interval = interval;
    attacker.requests = requests;
    attacker.pause = pause;
    std::thread attack_thread([&] { attacker.run(stop); });

    std::vector<double> probe;
    long probe_timeouts = 0;
    std::map<std::string, long> probe_failures;  // by what went wrong
    long rss_max = rss_before;
    std::thread probe_thread([&] {
        while (!stop) {
            double begin = mono_seconds();
            std::string why;
            if (auto took = timed_get(port, "/healthz", 1.0, &why)) {
                probe.push_back(*took);
            } else {
                ++probe_timeouts;
                ++probe_failures[why];
            }
            rss_max = std::max(rss_max, rss_kb(pkitd.pid()));
            sleep_seconds(std::max(0.0, 0.1 - (mono_seconds() - begin)));
        }
    });
    std::vector<double> status;
    long status_failures = 0;
    std::thread status_thread([&] {
        while (!stop) {
            ProgramRun run =
                run_program({pkitctl, "--socket", pkitd.socket_path(), "status"}, 10.0);
            if (run.exit_code == 0) {
                status.push_back(run.seconds);
            } else {
                ++status_failures;
            }
            sleep_seconds(0.2);
        }
    });
    sleep_seconds(seconds);
    stop = true;
    attack_thread.join();
    probe_thread.join();
    status_thread.join();

    const long rss_end = rss_kb(pkitd.pid());
    const double cpu = cpu_seconds(pkitd.pid()) - cpu_before;
    const bool probe_bound = attack == "pipelined" || attack == "slow-scrapers";
    print_row("/healthz from a fresh connection (1 s timeout)",
              format_number(percentile(probe, 0.99) * 1e3, 2), "ms p99",
              probe_bound ? "<= 100 ms" : "no timeout",
              std::to_string(probe_timeouts) + " timeouts",
              probe_timeouts == 0 && (!probe_bound || percentile(probe, 0.99) <= 0.100) ? "meets"
                                                                                        : "misses");
    if (attack == "slow-scrapers") {
        print_row("/metrics bodies cut short of their Content-Length", std::to_string(attacker.cut),
                  "bodies", "0", std::to_string(attacker.scrapes) + " whole",
                  attacker.cut == 0 ? "meets" : "misses");
    }
    print_note("probe: " + latency_summary(probe, probe_timeouts));
    for (const auto& [why, count] : probe_failures) {
        print_note("probe failures: " + std::to_string(count) + " " + why);
    }
    print_row("pkitctl status", format_number(percentile(status, 0.99) * 1e3, 2), "ms p99",
              attack == "scrapers" ? "<= 50 ms" : "", std::to_string(status_failures) + " failed",
              attack != "scrapers"                ? ""
              : percentile(status, 0.99) <= 0.050 ? "meets"
                                                  : "misses");
    print_note("pkitctl status: " + latency_summary(status, status_failures));
    if (status.size() < 100) {
        // One call in a hundred: with fewer, "p99" is only the slowest call.
        print_note("fewer than 100 status calls: p99 is the slowest one; --seconds 60 gives ~280");
    }
    print_row("pkitd RSS, peak", format_number(rss_max / 1024.0, 1), "MiB", "<= 64 MiB",
              "before " + format_number(rss_before / 1024.0, 1) + ", after " +
                  format_number(rss_end / 1024.0, 1) + " MiB",
              rss_max <= 64 * 1024 ? "meets" : "misses");
    print_note("pkitd CPU during the attack: " + format_number(cpu, 2) + " s of " +
               format_number(seconds, 0) + " s (" + format_number(100 * cpu / seconds, 1) + " %)");
    print_note(
        "connections closed by pkitd: " + std::to_string(attacker.closed_by_pkitd) +
        (scraping ? ", scrapes completed: " + std::to_string(attacker.scrapes) : std::string()));
    print_note(pkitd.alive() ? "pkitd still running" : "pkitd DIED");
    pkitd.stop();
    return 0;
}
