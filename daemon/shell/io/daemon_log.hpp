#pragma once
// pkitd's own output (SPEC §11 "Logging"): its log lines, each event's line, a load's
// warnings and errors, all on stderr as text ("pkitd: ...") or JSON records
// (--log-format), and the runs' forwarded output on stdout and stderr. Both writers
// keep their order and never block the loop (io/OutputWriter); flush() blocks, for
// pkitd's end and an upgrade's exec.

#include <uv.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "daemon/core/types.hpp"
#include "daemon/shell/io/output_writer.hpp"

namespace pkit::shell {

class DaemonLog {
public:
    DaemonLog(uv_loop_t* loop, LogFormat format);
    DaemonLog(const DaemonLog&) = delete;
    DaemonLog& operator=(const DaemonLog&) = delete;

    LogFormat format() const { return m_format; }
    // The writer of `stream` (a run's forwarded output).
    OutputWriter& writer(core::Stream stream) {
        return stream == core::Stream::stdout_ ? m_stdout : m_stderr;
    }
    // One line at `wall` (JSON's "at"): "pkitd: MESSAGE" at info, else with the level.
    void log(std::string_view level, const std::string& message, double wall);
    // `event`'s line, worded `message`: batched with the loop turn's other lines.
    void event(const core::Event& event, const std::string& message);
    // A load's warnings, each line "FILE:LINE:COL: warning: ..." (SPEC §21).
    void warnings(const std::vector<config::Diagnostic>& warnings, double wall);
    // A configuration's errors as a load prints them: each line, then how many (the
    // text log; the JSON log has one record an error).
    void errors(const std::vector<config::Diagnostic>& errors, const std::string& config_dir,
                double wall);
    // Everything written out, blocking.
    void flush();

private:
    LogFormat m_format;
    OutputWriter m_stdout;
    OutputWriter m_stderr;
};

}  // namespace pkit::shell
