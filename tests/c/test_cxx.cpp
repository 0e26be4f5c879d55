// The header from C++ (g++): one translation unit, the header included twice,
// the C API driven through RAII handles as a C++ host would.
#include "telha_jobs.h"
#include "telha_jobs.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>

namespace {

struct QueueFree {
    void operator()(tj_queue *q) const { tj_queue_free(q); }
};
struct JobFree {
    void operator()(tj_job *j) const { tj_job_free(j); }
};
struct ErrorFree {
    void operator()(tj_error *e) const { tj_error_free(e); }
};
struct SubFree {
    void operator()(tj_subscription *s) const { tj_subscription_free(s); }
};
struct InfoFree {
    void operator()(tj_job_info *i) const { tj_job_info_free(i); }
};
using Queue = std::unique_ptr<tj_queue, QueueFree>;
using Job = std::unique_ptr<tj_job, JobFree>;
using Error = std::unique_ptr<tj_error, ErrorFree>;
using Sub = std::unique_ptr<tj_subscription, SubFree>;
using Info = std::unique_ptr<tj_job_info, InfoFree>;

int passed = 0, failed = 0;

void check(bool ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        std::fprintf(stderr, "  CHECK failed: %s\n", what);
    }
    std::printf("%s test_cxx::%s\n", ok ? "ok  " : "FAIL", what);
}

}  // namespace

int main() {
    char dir[] = "/tmp/tj-cxx-XXXXXX";
    if (!mkdtemp(dir))
        return 2;

    tj_queue *raw = nullptr;
    tj_error *e = nullptr;
    tj_status s = tj_queue_open(dir, nullptr, &raw, &e);
    Error open_err(e);
    Queue q(raw);
    check(s == TJ_STATUS_OK && q, "open_from_cxx");

    tj_subscription *sr = nullptr;
    s = tj_queue_subscribe(q.get(), nullptr, &sr, nullptr);
    Sub sub(sr);
    check(s == TJ_STATUS_OK && sub, "subscribe_from_cxx");

    const std::string payload = "from C++";
    tj_id id{};
    bool created = false;
    s = tj_queue_enqueue(q.get(), "embed", reinterpret_cast<const uint8_t *>(payload.data()),
                         payload.size(), nullptr, &id, &created, nullptr);
    check(s == TJ_STATUS_OK && created, "enqueue_from_cxx");

    tj_job *jr = nullptr;
    s = tj_queue_lease_next(q.get(), "cxx-worker", nullptr, &jr, nullptr);
    Job job(jr);
    size_t len = 0;
    const uint8_t *p = job ? tj_job_payload(job.get(), &len) : nullptr;
    check(s == TJ_STATUS_OK && job && std::string(reinterpret_cast<const char *>(p), len) == payload,
          "lease_sees_the_payload");

    tj_token t = tj_job_token(job.get());
    const std::string half = "50%";
    const uint8_t *reports[1] = {reinterpret_cast<const uint8_t *>(half.data())};
    size_t report_len[1] = {half.size()};
    tj_status answers[1] = {TJ_STATUS_PANIC};
    s = tj_queue_heartbeat(q.get(), "cxx-worker", &t, 1, reports, report_len, 1, answers, nullptr, nullptr);
    check(s == TJ_STATUS_OK && answers[0] == TJ_STATUS_OK, "heartbeat_with_progress_from_cxx");
    check(tj_queue_complete(q.get(), &t, nullptr, 0, nullptr) == TJ_STATUS_OK, "complete_from_cxx");
    tj_job_info *ir = nullptr;
    s = tj_queue_wait(q.get(), &id, 1000, nullptr, &ir, nullptr);
    Info info(ir);
    check(s == TJ_STATUS_OK && info && tj_job_info_state(info.get()) == TJ_STATE_COMPLETED, "wait_from_cxx");
    tj_event ev{};
    std::string seen;
    while (tj_events_next(sub.get(), 1000, &ev, nullptr) == TJ_STATUS_OK) {
        seen += ev.transition;
        seen += ev.progress ? "(" + std::string(reinterpret_cast<const char *>(ev.progress), ev.progress_len) + ") " : " ";
        if (std::string(ev.transition) == "completed")
            break;
    }
    check(seen == "enqueued leased progress(50%) completed ", "events_from_cxx");
    // A repeat of the settled lease's token (a retry whose reply was lost)
    // answers as the first did; a token of another generation is stale.
    check(tj_queue_complete(q.get(), &t, nullptr, 0, nullptr) == TJ_STATUS_OK,
          "a_repeated_complete_answers_ok");
    tj_token old = t;
    old.generation += 1;
    e = nullptr;
    s = tj_queue_complete(q.get(), &old, nullptr, 0, &e);
    Error stale(e);
    check(s == TJ_STATUS_ABORTED && stale && std::strlen(tj_error_message(stale.get())) > 0,
          "a_stale_generation_is_aborted_with_a_message");
    check(std::string(tj_status_name(TJ_STATUS_CLOSED)) == "CLOSED", "status_names");

    sub.reset();
    q.reset();
    std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0)
        std::fprintf(stderr, "could not remove %s\n", dir);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
