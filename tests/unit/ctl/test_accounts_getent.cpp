// pkitctl's account lookups through getent(1) (ctl/accounts_getent.cpp): what `check`
// uses for `user` and `group` when not run as root, since pkitctl is linked statically.

#include <doctest/doctest.h>

#include <unistd.h>

#include "config/accounts.hpp"

TEST_CASE("pkitctl's account lookups: root is 0, an unknown name is none, options are names") {
    CHECK(pkit::config::user_id("root") == 0u);
    CHECK(pkit::config::group_id("root") == 0u);
    CHECK_FALSE(pkit::config::user_id("pkit-no-such-user-x9").has_value());
    CHECK_FALSE(pkit::config::group_id("pkit-no-such-group-x9").has_value());
    // A name that looks like an option is looked up, not taken by getent as one.
    CHECK_FALSE(pkit::config::user_id("--help").has_value());
    CHECK_FALSE(pkit::config::user_id("").has_value());
}
