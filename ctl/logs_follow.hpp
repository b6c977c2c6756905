#pragma once
// `pkitctl logs -f` of one or several services: each has its own connection with a
// `logs` request that follows; their lines are printed as they come, a marker line
// `--- run 5 (restart 4) ---` between two runs of a service, until every service
// has ended supervision (done, failed, stopped), pkitd closed the streams, or SIGINT.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctl/client.hpp"
#include "ctl/log_lines.hpp"

namespace pkit::ctl {

// One followed service.
struct Follower {
    std::string name;
    std::unique_ptr<Client> client;
    std::optional<int> shown_run;  // the run whose lines are shown
    std::optional<int> restart;    // of the latest `restarting` event
    bool done = false;             // nothing more to read
};

struct FollowFormat {
    bool json = false;     // print the protocol's objects (lines get "service" when several)
    bool several = false;  // more than one service
    std::string stream;    // --stream, applied here; empty: both
    LineFormat line;
};

// Reads and prints until every follower is done or interrupted() (see above).
void follow(std::vector<Follower>& followers, const FollowFormat& format);

}  // namespace pkit::ctl
