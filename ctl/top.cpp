// pkitctl top [--interval DURATION]: a live, full-screen view of every service (SPEC
// §17), sorted by CPU; c, m, r, n sort by CPU, memory, restarts, name; q or Ctrl-C
// quits. On a terminal: the alternate screen, the cursor hidden, keys read without
// echo, each frame written as the lines that changed (ctl/top_view.hpp); the terminal
// is restored however it ends. Without a terminal: one frame, then exit.

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>

#include "ctl/client.hpp"
#include "ctl/commands.hpp"
#include "ctl/common.hpp"
#include "ctl/render.hpp"
#include "ctl/time_text.hpp"
#include "ctl/top_view.hpp"

namespace pkit::ctl {
namespace {

struct TopOptions {
    std::string interval = "2s";
};

volatile std::sig_atomic_t g_resized = 0;

void on_resize(int) {
    g_resized = 1;
}

double monotonic_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::vector<proto::ServiceStatus> sample_rows(const GlobalOptions& global) {
    proto::Request request{.cmd = proto::Command::status};
    request.resources = true;
    request.fields = k_rendered_fields;
    return call_for_rows(global, request, timeout_of(global));
}

// The terminal in top's mode for as long as it lives: keys unbuffered and unechoed
// (signals kept, so Ctrl-C still interrupts), the alternate screen, no cursor. Put back
// as it was when destroyed, whether top quits, fails or is interrupted.
class Screen {
public:
    Screen() {
        if (::tcgetattr(STDIN_FILENO, &m_saved) == 0) {
            termios raw = m_saved;
            raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            m_restore = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        write_out("\033[?1049h\033[?25l");
    }
    ~Screen() {
        write_out("\033[?25h\033[?1049l");
        if (m_restore) {
            ::tcsetattr(STDIN_FILENO, TCSANOW, &m_saved);
        }
    }
    Screen(const Screen&) = delete;
    Screen& operator=(const Screen&) = delete;

    static void write_out(std::string_view text) {
        while (!text.empty()) {
            ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return;
            }
            text.remove_prefix(static_cast<std::size_t>(n));
        }
    }

    // The terminal's columns and lines (80 × 24 when it will not say).
    static std::pair<std::size_t, std::size_t> size() {
        struct winsize size {};
        if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0) {
            return {size.ws_col, size.ws_row};
        }
        return {80, 24};
    }

private:
    termios m_saved{};
    bool m_restore = false;
};

// Waits up to `seconds` for a key; the key, or 0 at the deadline, on a resize or an
// interrupt.
char wait_key(double seconds) {
    pollfd input{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&input, 1, static_cast<int>(seconds * 1000));
    if (ready <= 0) {
        return 0;
    }
    char key = 0;
    if (::read(STDIN_FILENO, &key, 1) != 1) {
        return 0;
    }
    return key;
}

int run_top(const GlobalOptions& global, const TopOptions& options) {
    const double interval = duration_option("--interval", options.interval, true);
    if (global.json) {
        throw usage_error("top: --json is not for a live view; use `status --resources --json`");
    }
    if (::isatty(STDOUT_FILENO) == 0 || ::isatty(STDIN_FILENO) == 0) {
        // One frame, as wide and as long as it is.
        auto rows = sample_rows(global);
        const CpuSample now = cpu_sample(rows, monotonic_seconds());
        for (const auto& line : top_frame(rows, now, nullptr, TopSort::cpu, 0, 0)) {
            std::cout << line << "\n";
        }
        return k_exit_ok;
    }

    catch_interrupts();
    struct sigaction resize {};
    resize.sa_handler = on_resize;
    sigemptyset(&resize.sa_mask);
    resize.sa_flags = 0;  // no SA_RESTART: the wait for a key returns at once
    sigaction(SIGWINCH, &resize, nullptr);

    Screen screen;
    TopSort sort = TopSort::cpu;
    std::vector<proto::ServiceStatus> rows = sample_rows(global);
    CpuSample now = cpu_sample(rows, monotonic_seconds());
    std::optional<CpuSample> before;
    std::vector<std::string> shown;
    bool full = true;
    double next_sample = now.at + interval;
    while (!interrupted()) {
        auto [columns, lines] = Screen::size();
        auto frame = top_frame(rows, now, before ? &*before : nullptr, sort, columns, lines);
        Screen::write_out(frame_diff(shown, frame, full));
        shown = std::move(frame);
        full = false;
        const char key = wait_key(std::max(0.0, next_sample - monotonic_seconds()));
        if (key == 'q' || key == 'Q' || interrupted()) {
            break;
        }
        if (auto chosen = sort_for_key(key)) {
            sort = *chosen;
        }
        if (g_resized != 0) {
            g_resized = 0;
            full = true;  // a resized terminal reflows what it showed: draw it all
        }
        if (monotonic_seconds() >= next_sample) {
            try {
                rows = sample_rows(global);
            } catch (const CtlError&) {
                if (interrupted()) {
                    break;  // Ctrl-C while waiting for pkitd: quit as from the keyboard
                }
                throw;
            }
            before = std::move(now);
            now = cpu_sample(rows, monotonic_seconds());
            next_sample = now.at + interval;
        }
    }
    return k_exit_ok;
}

}  // namespace

CommandSpec add_top(const GlobalOptions& global) {
    auto options = std::make_shared<TopOptions>();
    return {.name = "top",
            .description =
                "a live full-screen view of every service, sorted by CPU (keys: c "
                "m r n sort by CPU, memory, restarts, name; q quits); without a "
                "terminal, one frame",
            .options = {{.names = "--interval",
                         .help = "how often to refresh: 2, 500ms, 1m",
                         .target = &options->interval,
                         .type_name = "DURATION",
                         .show_default = true}},
            .run = [&global, options] { return run_top(global, *options); }};
}

}  // namespace pkit::ctl
