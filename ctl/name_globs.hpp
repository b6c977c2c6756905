#pragma once
// The NAME arguments of the commands over services (start, stop, restart, signal,
// wait, pause, resume, logs, events --service) may be globs, as status's are
// (`'worker@*'`, `'web-?'`): pkitctl replaces each by the services it matches before
// it sends the request, so pkitd only ever sees names.

#include <string>
#include <vector>

#include "ctl/global_options.hpp"

namespace pkit::ctl {

// `names` with each glob replaced by the services pkitd has that it matches, in start
// order (ctl/status_filter.hpp, expand_patterns); returned as given, without asking
// pkitd, when none is a glob. A glob that matches no service throws CtlError(1), as
// an unknown name does; no connection throws CtlError(4).
std::vector<std::string> expand_name_globs(const GlobalOptions& global,
                                           const std::vector<std::string>& names);

}  // namespace pkit::ctl
