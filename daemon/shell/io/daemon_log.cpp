#include "daemon/shell/io/daemon_log.hpp"

#include <unistd.h>

#include "daemon/shell/views/event_view.hpp"
#include "proto/protocol.hpp"

namespace pkit::shell {

DaemonLog::DaemonLog(uv_loop_t* loop, LogFormat format)
    : m_format(format), m_stdout(loop, STDOUT_FILENO), m_stderr(loop, STDERR_FILENO) {}

void DaemonLog::log(std::string_view level, const std::string& message, double wall) {
    if (m_format == LogFormat::json) {
        proto::json line = {{"at", wall}, {"level", level}, {"msg", message}};
        std::string text = proto::to_line(line);
        text.pop_back();
        m_stderr.write_line(text);
    } else if (level == "info") {
        m_stderr.write_line("pkitd: " + message);
    } else {
        m_stderr.write_line("pkitd: " + std::string(level) + ": " + message);
    }
}

void DaemonLog::event(const core::Event& event, const std::string& message) {
    // Batched with the turn's other lines: a shutdown of 10,000 services emits 10,000
    // events, and a write(2) each was a fifth of what pkitd did after the last exit.
    // A line that log() writes meanwhile goes after them (OutputWriter keeps the order).
    if (m_format == LogFormat::json) {
        proto::json line = event_json(event);
        line["level"] = "info";
        line["msg"] = message;
        std::string text = proto::to_line(line);
        text.pop_back();
        m_stderr.batch_line({text});
    } else {
        m_stderr.batch_line({"pkitd: ", message});
    }
}

void DaemonLog::warnings(const std::vector<config::Diagnostic>& warnings, double wall) {
    for (const config::Diagnostic& warning : warnings) {
        if (m_format == LogFormat::json) {
            log("warning", warning.to_string(), wall);
        } else {
            m_stderr.write_line(warning.to_string());
        }
    }
}

void DaemonLog::errors(const std::vector<config::Diagnostic>& errors, const std::string& config_dir,
                       double wall) {
    const bool text = m_format == LogFormat::text;
    for (const config::Diagnostic& d : errors) {
        text ? m_stderr.write_line(d.to_string()) : log("error", d.to_string(), wall);
    }
    if (text) {
        const std::size_t n = errors.size();
        m_stderr.write_line("pkitd: " + std::to_string(n) + " configuration error" +
                            (n == 1 ? "" : "s") + " in " + config_dir);
    }
}

void DaemonLog::flush() {
    m_stdout.flush_blocking();
    m_stderr.flush_blocking();
}

}  // namespace pkit::shell
