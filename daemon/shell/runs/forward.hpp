#pragma once
// A run's output line forwarded to pkitd's own stdout or stderr (SPEC §10 `forward`):
// as it is (raw), prefixed with the service's name, or as a JSON record when pkitd logs
// JSON; batched with the loop turn's other lines.

#include <string_view>

#include "daemon/core/service.hpp"
#include "daemon/shell/io/output_writer.hpp"

namespace pkit::shell {

void forward_line(OutputWriter& writer, LogFormat format, const core::Service& service,
                  core::Stream stream, std::string_view text, double wall);

}  // namespace pkit::shell
