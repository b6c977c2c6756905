#pragma once
// What every benchmark needs, kept in one header so that each benchmark stays one .cpp:
// a temporary configuration tree, a pkitd under test (started, reached and always
// cleaned up), a blocking NDJSON client, /proc readings, medians and the result rows.
//
// Processes are found again by an environment marker: pkitd gets PKIT_BENCH_MARKER and
// its services inherit it, so that Pkitd's destructor can kill whatever survives pkitd,
// whatever session it moved to.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proto/line_client.hpp"

namespace pkit::bench {

using json = nlohmann::json;

inline double mono_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

inline void sleep_seconds(double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// The value at fraction `p` (0..1) of the sorted values, nearest rank; NaN when empty.
inline double percentile(std::vector<double> values, double p) {
    if (values.empty()) {
        return NAN;
    }
    std::sort(values.begin(), values.end());
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
    return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// NaN (a figure not measured) counts as no value.
inline double median(std::vector<double> values) {
    std::erase_if(values, [](double v) { return std::isnan(v); });
    if (values.empty()) {
        return NAN;
    }
    std::sort(values.begin(), values.end());
    std::size_t mid = values.size() / 2;
    return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

// The value after `--name` on the command line, else `fallback`.
inline std::string arg(int argc, char** argv, std::string_view name, std::string fallback) {
    for (int i = 1; i + 1 < argc; ++i) {
        if (name == argv[i]) {
            return argv[i + 1];
        }
    }
    return fallback;
}

inline double arg_number(int argc, char** argv, std::string_view name, double fallback) {
    std::string text = arg(argc, argv, name, "");
    return text.empty() ? fallback : std::strtod(text.c_str(), nullptr);
}

// --- Result rows ------------------------------------------------------------------

inline std::string format_number(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// One figure: `what`, its median and unit, the goal it is held against and the ratio
// printed beside it. `verdict` is "meets", "misses" or "" (a figure without a goal).
inline void print_row(std::string_view what, const std::string& value, std::string_view unit,
                      std::string_view goal, const std::string& ratio, std::string_view verdict) {
    std::printf("  %-44.*s %12s %-8.*s %-18.*s %-16s %.*s\n", static_cast<int>(what.size()),
                what.data(), value.c_str(), static_cast<int>(unit.size()), unit.data(),
                static_cast<int>(goal.size()), goal.data(), ratio.c_str(),
                static_cast<int>(verdict.size()), verdict.data());
    std::fflush(stdout);
}

inline void print_header(std::string_view title) {
    std::printf("\n== %.*s\n", static_cast<int>(title.size()), title.data());
    std::printf("  %-44s %12s %-8s %-18s %-16s %s\n", "figure", "median", "unit", "goal", "ratio",
                "verdict");
    std::fflush(stdout);
}

inline void print_note(const std::string& text) {
    std::printf("  # %s\n", text.c_str());
    std::fflush(stdout);
}

// --- Files ------------------------------------------------------------------------

class TempDir {
public:
    explicit TempDir(const std::string& prefix) {
        std::string pattern = "/tmp/" + prefix + "-XXXXXX";
        std::vector<char> buffer(pattern.begin(), pattern.end());
        buffer.push_back('\0');
        if (::mkdtemp(buffer.data()) != nullptr) {
            m_path = buffer.data();
        }
    }
    ~TempDir() {
        if (!m_path.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(m_path, ignored);
        }
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    bool ok() const { return !m_path.empty(); }
    const std::string& path() const { return m_path; }
    std::string file(std::string_view name) const { return m_path + "/" + std::string(name); }

    // Writes `text` to `name` under the directory, creating parent directories.
    void write(std::string_view name, std::string_view text) const {
        std::filesystem::path target = file(name);
        std::filesystem::create_directories(target.parent_path());
        std::ofstream out(target);
        out << text;
    }

private:
    std::string m_path;
};

// A TCP port on 127.0.0.1 that was free a moment ago (for a pkitd's [http] listen).
inline int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// One `GET PATH` (HTTP/1.0) to 127.0.0.1:PORT on a connection of its own: the whole
// response, or "" on failure.
inline std::string http_get(int port, const std::string& path, double timeout) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    std::string response;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        const std::string request = "GET " + path + " HTTP/1.0\r\nHost: bench\r\n\r\n";
        if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
            double until = mono_seconds() + timeout;
            char buffer[65536];
            pollfd p{fd, POLLIN, 0};
            while (mono_seconds() < until && ::poll(&p, 1, 100) >= 0) {
                if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
                    continue;
                }
                ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
                if (n <= 0) {
                    break;
                }
                response.append(buffer, static_cast<std::size_t>(n));
            }
        }
    }
    ::close(fd);
    return response;
}

// The number of a service in a tree of many: zero-padded so that name order is
// numeric order.
inline std::string service_name(std::size_t i) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "svc%04zu", i);
    return buffer;
}

// --- /proc ------------------------------------------------------------------------

// The whole file, or what was read before an error: a /proc file of a process that
// exits meanwhile fails with ESRCH, which libstdc++'s stream reports by throwing.
inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text;
    try {
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::ios_base::failure&) {
    }
    return text;
}

// The number after `key` (e.g. "VmRSS:") in a /proc key-value file, or -1.
inline long proc_field(const std::string& text, std::string_view key) {
    std::size_t at = 0;
    while ((at = text.find(key, at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') {
            return std::strtol(text.c_str() + at + key.size(), nullptr, 10);
        }
        at += key.size();
    }
    return -1;
}

struct Memory {
    long rss_kib = -1;
    long pss_kib = -1;
    long private_kib = -1;  // Private_Clean + Private_Dirty
};

inline Memory read_memory(pid_t pid) {
    Memory m;
    std::string base = "/proc/" + std::to_string(pid);
    m.rss_kib = proc_field(read_text(base + "/status"), "VmRSS:");
    std::string rollup = read_text(base + "/smaps_rollup");
    m.pss_kib = proc_field(rollup, "Pss:");
    long clean = proc_field(rollup, "Private_Clean:");
    long dirty = proc_field(rollup, "Private_Dirty:");
    if (clean >= 0 && dirty >= 0) {
        m.private_kib = clean + dirty;
    }
    return m;
}

struct Switches {
    long voluntary = 0;
    long nonvoluntary = 0;
    long threads = 0;
    long total() const { return voluntary + nonvoluntary; }
};

// Context switches summed over every thread of `pid` (a blocked thread that wakes up
// costs one voluntary switch when it sleeps again).
inline Switches read_switches(pid_t pid) {
    Switches s;
    std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(tasks, error)) {
        std::string text = read_text(entry.path().string() + "/status");
        long v = proc_field(text, "voluntary_ctxt_switches:");
        long n = proc_field(text, "nonvoluntary_ctxt_switches:");
        if (v >= 0 && n >= 0) {
            s.voluntary += v;
            s.nonvoluntary += n;
            ++s.threads;
        }
    }
    return s;
}

// The context switches of every thread of `pid` over `seconds`: its wakeups then.
inline long wakeups_over(pid_t pid, double seconds) {
    Switches before = read_switches(pid);
    sleep_seconds(seconds);
    Switches after = read_switches(pid);
    return after.total() - before.total();
}

// utime + stime of `pid` in seconds, from /proc/PID/stat; NaN when unreadable.
inline double cpu_seconds(pid_t pid) {
    std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    std::size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) {
        return NAN;
    }
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    double ticks = 0.0;
    // After the name: state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i >= 14) {
            ticks += std::strtod(field.c_str(), nullptr);
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Children of `parent` in state Z (exited, not yet reaped), from /proc/*/stat.
inline long count_zombies(pid_t parent) {
    long n = 0;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
        std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::string stat = read_text(entry.path().string() + "/stat");
        std::size_t close = stat.rfind(')');
        if (close == std::string::npos || close + 2 >= stat.size()) {
            continue;
        }
        char state = 0;
        long ppid = 0;
        if (std::sscanf(stat.c_str() + close + 2, "%c %ld", &state, &ppid) == 2 && state == 'Z' &&
            ppid == parent) {
            ++n;
        }
    }
    return n;
}

inline long count_fds(pid_t pid) {
    long n = 0;
    std::error_code error;
    for (auto it =
             std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", error);
         !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
        ++n;
    }
    return n;
}

// PIDs whose environment holds `marker` (PKIT_BENCH_MARKER=...).
inline std::vector<pid_t> marked_processes(const std::string& marker) {
    std::vector<pid_t> found;
    std::string needle = "PKIT_BENCH_MARKER=" + marker;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
        std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::string env = read_text(entry.path().string() + "/environ");
        std::size_t at = env.find(needle);
        // The whole entry, not a prefix of a longer marker.
        if (at != std::string::npos &&
            (at + needle.size() == env.size() || env[at + needle.size()] == '\0')) {
            found.push_back(static_cast<pid_t>(std::stol(name)));
        }
    }
    return found;
}

// --- The control socket -----------------------------------------------------------

// A blocking NDJSON client on one connection, over the shared line client
// (proto/line_client.hpp) that pkitctl and the integration tests use too.
class Client {
public:
    Client() = default;
    ~Client() { close(); }
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    bool connect(const std::string& path) {
        close();
        auto fd = pkit::proto::connect_unix(path);
        if (!fd) {
            return false;
        }
        m_fd = *fd;
        return true;
    }

    void close() {
        if (m_fd >= 0) {
            ::close(m_fd);
        }
        m_fd = -1;
        m_buffer.clear();
    }

    bool send(std::string_view data) { return pkit::proto::send_all(m_fd, data).has_value(); }

    // The next line without its newline; false at end of stream, on an error, or when
    // `timeout` seconds (negative: none) pass without one (then timed_out() is true).
    bool read_line(std::string& line, double timeout = -1.0) {
        std::optional<std::chrono::steady_clock::time_point> deadline;
        if (timeout >= 0) {
            deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(timeout));
        }
        auto read = pkit::proto::read_line(m_fd, m_buffer, deadline);
        m_timed_out = read.status == pkit::proto::LineRead::timeout;
        if (read.status != pkit::proto::LineRead::line) {
            return false;
        }
        line = std::move(read.text);
        return true;
    }

    // Sends one request line (newline added) and reads its reply line, waiting at most
    // `timeout` seconds for it (negative: no limit). After a timeout the connection is
    // closed (a late reply would be read as the next one's): connect again.
    std::optional<std::string> request(std::string_view line, double timeout = -1.0) {
        std::string out(line);
        out.push_back('\n');
        std::string reply;
        if (!send(out) || !read_line(reply, timeout)) {
            if (m_timed_out) {
                close();
                m_timed_out = true;
            }
            return std::nullopt;
        }
        return reply;
    }

    // A request whose reply is parsed; null on any failure.
    json request_json(std::string_view line, double timeout = -1.0) {
        auto reply = request(line, timeout);
        if (!reply) {
            return nullptr;
        }
        json parsed = json::parse(*reply, nullptr, false);
        return parsed.is_discarded() ? json(nullptr) : parsed;
    }

private:
    int m_fd = -1;
    std::string m_buffer;
    bool m_timed_out = false;

public:
    bool connected() const { return m_fd >= 0; }
    bool timed_out() const { return m_timed_out; }
    int fd() const { return m_fd; }
};

// --- pkitd under test -------------------------------------------------------------

class Pkitd {
public:
    // pkitd reads `config_dir` and listens on config_dir/pkitd.sock; its stderr (the
    // event log, one line an event) goes to `log_path`.
    Pkitd(std::string binary, std::string config_dir, std::string log_path = "/dev/null")
        : m_binary(std::move(binary)),
          m_config(std::move(config_dir)),
          m_socket(m_config + "/pkitd.sock"),
          m_log(std::move(log_path)) {}
    ~Pkitd() { stop(); }
    Pkitd(const Pkitd&) = delete;
    Pkitd& operator=(const Pkitd&) = delete;

    // Forks and execs pkitd; `started_at()` is the clock just before the fork.
    bool start() {
        int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        int log_fd = ::open(m_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        std::string marker = "PKIT_BENCH_MARKER=" + m_config;
        m_started_at = mono_seconds();
        m_pid = ::fork();
        if (m_pid == 0) {
            ::setpgid(0, 0);
            ::dup2(null_fd, 0);
            ::dup2(null_fd, 1);
            ::dup2(log_fd, 2);
            ::putenv(marker.data());
            ::execl(m_binary.c_str(), m_binary.c_str(), "--config", m_config.c_str(), "--socket",
                    m_socket.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(null_fd);
        ::close(log_fd);
        return m_pid > 0;
    }

    // Connects `client` as soon as pkitd listens; false after `timeout` seconds.
    bool connect(Client& client, double timeout = 10.0) {
        double until = mono_seconds() + timeout;
        while (mono_seconds() < until) {
            if (client.connect(m_socket)) {
                return true;
            }
            if (!alive()) {
                return false;
            }
            sleep_seconds(0.0005);
        }
        return false;
    }

    bool alive() {
        if (m_pid <= 0) {
            return false;
        }
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_exit_code = exit_code_of(status);
            m_pid = -1;
            return false;
        }
        return true;
    }

    // The exit code pkitd ended with (128 + N for a signal N), -1 while unknown (or
    // when `stop` had to SIGKILL it).
    int exit_code() const { return m_exit_code; }

    static int exit_code_of(int status) {
        if (WIFEXITED(status)) {
            return WEXITSTATUS(status);
        }
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    }

    // SIGTERM (a graceful shutdown), SIGKILL after `grace` seconds; then SIGKILL for
    // anything that still carries the marker. Returns the seconds pkitd took to exit.
    // `each_poll` runs at every poll of the wait (1 ms apart), to watch something else.
    double stop(double grace = 10.0, const std::function<void()>& each_poll = {}) {
        double took = NAN;
        if (m_pid > 0) {
            double begin = mono_seconds();
            ::kill(m_pid, SIGTERM);
            int status = 0;
            while (mono_seconds() - begin < grace) {
                if (each_poll) {
                    each_poll();
                }
                if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
                    took = mono_seconds() - begin;
                    m_exit_code = exit_code_of(status);
                    m_pid = -1;
                    break;
                }
                sleep_seconds(0.001);
            }
            if (m_pid > 0) {
                ::kill(-m_pid, SIGKILL);
                ::waitpid(m_pid, &status, 0);
                m_pid = -1;
            }
        }
        for (pid_t left : marked_processes(m_config)) {
            ::kill(-left, SIGKILL);
            ::kill(left, SIGKILL);
        }
        return took;
    }

    pid_t pid() const { return m_pid; }
    double started_at() const { return m_started_at; }
    const std::string& socket_path() const { return m_socket; }

private:
    std::string m_binary;
    std::string m_config;
    std::string m_socket;
    std::string m_log;
    pid_t m_pid = -1;
    int m_exit_code = -1;
    double m_started_at = 0.0;
};

// --- Other programs ---------------------------------------------------------------

struct ProgramRun {
    double seconds = NAN;    // wall time from fork to exit (or to the kill)
    int exit_code = -1;      // 128 + N for a signal N
    bool timed_out = false;  // killed after `timeout`
};

// Runs `argv` (stdin /dev/null, stdout to `out_path`, stderr to /dev/null) in its own
// process group, killing the group after `timeout` seconds.
inline ProgramRun run_program(const std::vector<std::string>& argv, double timeout,
                              const std::string& out_path = "/dev/null") {
    ProgramRun result;
    double begin = mono_seconds();
    pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        int in_fd = ::open("/dev/null", O_RDONLY);
        int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null_fd = ::open("/dev/null", O_WRONLY);
        ::dup2(in_fd, 0);
        ::dup2(out_fd, 1);
        ::dup2(null_fd, 2);
        std::vector<char*> args;
        for (const auto& a : argv) {
            args.push_back(const_cast<char*>(a.c_str()));
        }
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    if (pid < 0) {
        return result;
    }
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            result.seconds = mono_seconds() - begin;
            result.exit_code = Pkitd::exit_code_of(status);
            return result;
        }
        if (mono_seconds() - begin > timeout) {
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            result.seconds = mono_seconds() - begin;
            result.timed_out = true;
            return result;
        }
        sleep_seconds(0.0002);
    }
}

// A latency series as "p50 X / p99 Y / max Z ms (N, T timeouts)".
inline std::string latency_summary(const std::vector<double>& seconds, long timeouts) {
    if (seconds.empty()) {
        return "no sample (" + std::to_string(timeouts) + " timeouts)";
    }
    return "p50 " + format_number(percentile(seconds, 0.5) * 1e3, 2) + " / p99 " +
           format_number(percentile(seconds, 0.99) * 1e3, 2) + " / max " +
           format_number(percentile(seconds, 1.0) * 1e3, 2) + " ms (" +
           std::to_string(seconds.size()) + " answered, " + std::to_string(timeouts) + " timeouts)";
}

// The services of a status reply, or an empty array.
inline json services_of(const json& reply) {
    if (reply.is_object() && reply.value("ok", false) && reply.contains("result") &&
        reply["result"].contains("services")) {
        return reply["result"]["services"];
    }
    return json::array();
}

inline std::size_t count_state(const json& services, std::string_view state) {
    std::size_t n = 0;
    for (const auto& s : services) {
        if (s.value("state", "") == state) {
            ++n;
        }
    }
    return n;
}

// Polls status until `count` services are running; the seconds since pkitd's fork, or
// nullopt after `timeout`.
inline std::optional<double> wait_running(Pkitd& pkitd, Client& client, std::size_t count,
                                          double timeout) {
    double until = mono_seconds() + timeout;
    while (mono_seconds() < until) {
        json services = services_of(client.request_json(R"({"id":1,"cmd":"status"})"));
        if (count_state(services, "running") >= count) {
            return mono_seconds() - pkitd.started_at();
        }
        sleep_seconds(0.002);
    }
    return std::nullopt;
}

// Pings pkitd from its own connection and thread, one request at a time with `pause`
// seconds between, each allowed `timeout` seconds (a timed-out one is counted and the
// connection made again). What the loop's responsiveness looks like meanwhile.
class PingSampler {
public:
    struct Sample {
        double sent_at = 0.0;  // mono_seconds()
        double latency = NAN;  // seconds; NaN for a timeout or a failure
    };

    PingSampler(std::string socket, double pause = 0.01, double timeout = 2.0)
        : m_socket(std::move(socket)), m_pause(pause), m_timeout(timeout) {}
    ~PingSampler() { stop(); }
    PingSampler(const PingSampler&) = delete;
    PingSampler& operator=(const PingSampler&) = delete;

    void start() {
        m_running = true;
        m_thread = std::thread([this] { loop(); });
    }

    void stop() {
        m_running = false;
        if (m_thread.joinable()) {
            m_thread.join();
        }
    }

    // The samples sent within [from, to] (mono_seconds()).
    std::vector<Sample> samples(double from = 0.0, double to = 1e300) {
        std::lock_guard<std::mutex> lock(m_mutex);
        std::vector<Sample> out;
        for (const auto& s : m_samples) {
            if (s.sent_at >= from && s.sent_at <= to) {
                out.push_back(s);
            }
        }
        return out;
    }

    // "p50 / p99 / max" of the samples in the window, timeouts counted apart.
    std::string summary(double from = 0.0, double to = 1e300) {
        std::vector<double> answered;
        long failed = 0;
        for (const auto& s : samples(from, to)) {
            if (std::isnan(s.latency)) {
                ++failed;
            } else {
                answered.push_back(s.latency);
            }
        }
        return latency_summary(answered, failed);
    }

    // The longest latency in the window, a timeout counting as its whole allowance.
    double max_latency(double from = 0.0, double to = 1e300) {
        double worst = 0.0;
        for (const auto& s : samples(from, to)) {
            worst = std::max(worst, std::isnan(s.latency) ? m_timeout : s.latency);
        }
        return worst;
    }

private:
    void loop() {
        Client client;
        while (m_running) {
            if (!client.connected() && !client.connect(m_socket)) {
                sleep_seconds(0.01);
                continue;
            }
            Sample s;
            s.sent_at = mono_seconds();
            auto reply = client.request(R"({"id":0,"cmd":"ping"})", m_timeout);
            json parsed = reply ? json::parse(*reply, nullptr, false) : json(nullptr);
            if (parsed.is_object() && parsed.value("ok", false)) {
                s.latency = mono_seconds() - s.sent_at;
            } else if (!client.timed_out()) {
                client.close();  // pkitd closed it, or gone: no sample
                sleep_seconds(0.01);
                continue;
            }
            {
                std::lock_guard<std::mutex> lock(m_mutex);
                m_samples.push_back(s);
            }
            sleep_seconds(m_pause);
        }
    }

    std::string m_socket;
    double m_pause;
    double m_timeout;
    std::atomic<bool> m_running{false};
    std::thread m_thread;
    std::mutex m_mutex;
    std::vector<Sample> m_samples;
};

// Waits until `count` processes carry the marker of the pkitd whose config is `dir`.
inline bool wait_processes(const std::string& dir, std::size_t count, double timeout) {
    double until = mono_seconds() + timeout;
    while (mono_seconds() < until) {
        if (marked_processes(dir).size() >= count) {
            return true;
        }
        sleep_seconds(0.05);
    }
    return false;
}

// A median time against a goal (none when goal_ms <= 0).
inline void time_row(const std::string& what, const std::vector<double>& seconds, double goal_ms) {
    if (seconds.empty()) {
        print_row(what, "n/a", "ms", "", "-", "no figure");
        return;
    }
    double ms = median(seconds) * 1e3;
    if (goal_ms <= 0) {
        print_row(what, format_number(ms, 2), "ms", "", "", "");
        return;
    }
    print_row(what, format_number(ms, 2), "ms", "< " + format_number(goal_ms, 0) + " ms",
              format_number(ms / goal_ms, 2) + "x goal", ms < goal_ms ? "meets" : "misses");
}

}  // namespace pkit::bench
