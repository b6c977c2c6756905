#include "daemon/shell/runs/forward.hpp"

#include "proto/protocol.hpp"

namespace pkit::shell {

void forward_line(OutputWriter& writer, LogFormat format, const core::Service& s,
                  core::Stream stream, std::string_view text, double wall) {
    switch (s.spec().output.forward) {
        case config::Forward::none:
            return;
        case config::Forward::raw:
            writer.batch_line({text});
            return;
        case config::Forward::prefix:
            if (format == LogFormat::json) {
                proto::json line = {{"at", wall},
                                    {"service", s.name()},
                                    {"stream", core::to_string(stream)},
                                    {"text", text}};
                std::string encoded = proto::to_line(line);
                encoded.pop_back();
                writer.batch_line({encoded});
            } else {
                writer.batch_line({s.name(), " | ", text});
            }
            return;
    }
}

}  // namespace pkit::shell
