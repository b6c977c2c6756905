#include "daemon/shell/cgroup/resources_pass.hpp"

#include <algorithm>

namespace pkit::shell {

// One work item: each takes the next share not yet taken, so that every share is read
// even when an item never runs (cancelled, or queued behind others).
struct ResourcesPass::Work {
    uv_work_t req{};
    ResourcesPass* pass = nullptr;
};

ResourcesPass* ResourcesPass::start(uv_loop_t* loop, std::vector<pid_t> groups,
                                    std::vector<RunCgroupRead> cgroups, bool read_own, Done done,
                                    bool descendants) {
    std::unique_ptr<ResourcesPass> pass(new ResourcesPass());
    const std::size_t shares = std::clamp(uv_available_parallelism(), 1U, k_pass_threads);
    pass->m_groups = std::move(groups);
    pass->m_cgroups = std::move(cgroups);
    pass->m_read_own = read_own;
    pass->m_descendants = descendants;
    pass->m_done = std::move(done);
    pass->m_scans.resize(shares);
    pass->m_share_count = static_cast<unsigned>(shares);
    pass->m_shares_left = pass->m_share_count;
    for (std::size_t k = 0; k < shares; ++k) {
        pass->m_works.push_back(std::make_unique<Work>());
    }
    for (auto& work : pass->m_works) {
        work->req.data = work.get();
        work->pass = pass.get();
        int rc = uv_queue_work(
            loop, &work->req,
            [](uv_work_t* req) { static_cast<Work*>(req->data)->pass->scan_shares(); },
            [](uv_work_t* req, int) { static_cast<Work*>(req->data)->pass->work_done(); });
        if (rc != 0) {
            break;  // the items queued read every share
        }
        ++pass->m_works_left;
    }
    if (pass->m_works_left == 0) {
        return nullptr;
    }
    return pass.release();
}

ResourcesPass::~ResourcesPass() = default;

void ResourcesPass::abandon() {
    m_done = nullptr;
    for (auto& work : m_works) {
        (void)uv_cancel(reinterpret_cast<uv_req_t*>(&work->req));
    }
}

void ResourcesPass::scan_shares() {
    // On a pool thread. m_scans is touched only for a share taken here: the last share's
    // finish() moves it while another item may still be looking for one.
    const unsigned count = m_share_count;
    for (unsigned k = m_next_share++; k < count; k = m_next_share++) {
        try {
            m_scans[k] = scan_group_resources(
                m_groups, {k, count}, m_descendants || runs_have_cgroups(m_groups, m_cgroups));
        } catch (...) {
            m_scans[k] = {};  // out of memory: this share shows nothing
        }
        if (--m_shares_left == 0) {
            finish();
        }
    }
}

void ResourcesPass::finish() {
    try {
        m_resources = finish_run_resources(m_groups, m_cgroups, std::move(m_scans), m_descendants);
        if (m_read_own) {
            m_own = read_own_process();
        }
    } catch (...) {
        m_resources.clear();  // out of memory: no resources this time
    }
}

void ResourcesPass::work_done() {
    // On the loop, once for each queued item: after the last, the result is handed over.
    if (--m_works_left > 0) {
        return;
    }
    std::unique_ptr<ResourcesPass> self(this);
    if (m_done) {
        try {
            m_done(std::move(m_resources), std::move(m_own));
        } catch (...) {
            // Never into libuv.
        }
    }
}

}  // namespace pkit::shell
