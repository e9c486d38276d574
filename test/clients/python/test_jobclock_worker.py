"""The pure parts of the jobclock_worker package (clients/python), without a server: durations, backoff, and
what a handler's return value or exception turns into (the report the worker queues)."""
import os
import unittest

import jobclock_worker
from jobclock_worker import _worker as jw


def leased(job_id="7", **fields):
    return {"id": job_id, "type": "t", "leaseToken": "tok-" + job_id, "deadline": None, "taskState": None, "args": {}, **fields}


class Package(unittest.TestCase):
    def test_is_installed_typed_and_exports_the_worker_api(self):
        where = os.path.dirname(jobclock_worker.__file__)
        self.assertIn("site-packages", where)  # the installed package, not the checkout's src/
        self.assertTrue(os.path.isfile(os.path.join(where, "py.typed")))
        for name in ["Worker", "RetryLater", "FinalFailure", "Result", "JobContext", "parse_duration", "format_duration"]:
            self.assertIn(name, jobclock_worker.__all__)
            self.assertIs(getattr(jobclock_worker, name), getattr(jw, name))


class Durations(unittest.TestCase):
    def test_parses_go_style_strings_and_numbers(self):
        self.assertEqual(jw.parse_duration("500ms"), 0.5)
        self.assertEqual(jw.parse_duration("30s"), 30.0)
        self.assertEqual(jw.parse_duration("1h30m"), 5400.0)
        self.assertEqual(jw.parse_duration("2d"), 172800.0)
        self.assertEqual(jw.parse_duration(" 1.5s "), 1.5)
        self.assertEqual(jw.parse_duration(3), 3.0)
        self.assertEqual(jw.parse_duration(0.25), 0.25)

    def test_rejects_what_is_not_a_duration(self):
        for bad in ["", "30", "5x", "s", "1h 30m", "-1s", True, -1, float("nan")]:
            with self.assertRaises(ValueError, msg=repr(bad)):
                jw.parse_duration(bad)

    def test_formats_whole_milliseconds(self):
        self.assertEqual(jw.format_duration(1.0), "1000ms")
        self.assertEqual(jw.format_duration(0.0004), "0ms")
        self.assertEqual(jw.format_duration(10 / 3), "3333ms")
        self.assertEqual(jw.format_duration(-2), "0ms")


class Backoff(unittest.TestCase):
    def test_doubles_from_a_tenth_of_a_second_up_to_the_cap_with_jitter_and_resets(self):
        b = jw._Backoff(cap=1.0)
        delays = [b.next() for _ in range(8)]
        for i, d in enumerate(delays[:3]):
            full = 0.1 * 2 ** (i + 1)
            self.assertGreaterEqual(d, full * 0.5)
            self.assertLessEqual(d, full)
        self.assertTrue(all(0.5 <= d <= 1.0 for d in delays[4:]))
        b.reset()
        self.assertLessEqual(b.next(), 0.2)


class Outcomes(unittest.TestCase):
    def run_one(self, handler, job=None):
        w = jw.Worker("http://127.0.0.1:9", handlers={"t": handler})
        ctx = jw.JobContext(job or leased(), w.lease_seconds, 0.0)
        w._active[ctx.id] = ctx
        w._running = 1
        w._run_handler(ctx)
        self.assertEqual(w._running, 0)
        self.assertEqual(len(w._reports), 1)
        return w._reports[0][1]

    def test_the_return_value_is_the_result_even_a_dict_with_a_state_key(self):
        self.assertEqual(self.run_one(lambda j, c: {"state": "sent"}), {"id": "7", "leaseToken": "tok-7", "outcome": "finished", "result": {"state": "sent"}})

    def test_none_reports_no_result(self):
        self.assertEqual(self.run_one(lambda j, c: None), {"id": "7", "leaseToken": "tok-7", "outcome": "finished"})

    def test_state_comes_from_save_state_or_from_a_Result(self):
        def saves(job, ctx):
            ctx.save_state({"cursor": 1})
            return 5

        self.assertEqual(self.run_one(saves), {"id": "7", "leaseToken": "tok-7", "outcome": "finished", "result": 5, "state": {"cursor": 1}})
        report = self.run_one(lambda j, c: jw.Result({"ok": True}, state=None))
        self.assertEqual((report["result"], report["state"]), ({"ok": True}, None))  # null state is still state
        self.assertNotIn("state", self.run_one(lambda j, c: jw.Result(1)))

    def test_an_exception_reports_failed_and_keeps_saved_state(self):
        def breaks(job, ctx):
            ctx.save_state({"cursor": 9})
            raise KeyError("x")

        self.assertEqual(
            self.run_one(breaks),
            {"id": "7", "leaseToken": "tok-7", "outcome": "failed", "error": {"message": "'x'", "type": "KeyError"}, "state": {"cursor": 9}},
        )

    def test_RetryLater_carries_retryIn(self):
        def later(job, ctx):
            raise jw.RetryLater("30s", "busy")

        self.assertEqual(self.run_one(later)["retryIn"], "30s")
        self.assertEqual(jw.RetryLater(1.5).retry_in, "1500ms")
        with self.assertRaises(ValueError):
            jw.RetryLater("soon")

    def test_FinalFailure_fails_for_good(self):
        def bad(job, ctx):
            raise jw.FinalFailure("bad args")

        self.assertEqual(
            self.run_one(bad),
            {"id": "7", "leaseToken": "tok-7", "outcome": "failed", "error": {"message": "bad args", "type": "FinalFailure"}, "final": True},
        )

    def test_a_result_that_is_not_JSON_reports_failed(self):
        report = self.run_one(lambda j, c: {"when": object()})
        self.assertEqual((report["outcome"], report["error"]["type"]), ("failed", "TypeError"))

    def test_progress_and_state_must_be_JSON(self):
        ctx = jw.JobContext(leased(), 30.0, 0.0)
        with self.assertRaises(TypeError):
            ctx.progress({1, 2})
        with self.assertRaises(TypeError):
            ctx.save_state(object())

    def test_the_first_heartbeat_is_due_at_a_third_of_the_lease(self):
        self.assertAlmostEqual(jw.JobContext(leased(), 30.0, 100.0).next_beat, 110.0)
        self.assertAlmostEqual(jw.JobContext(leased(), 1.0, 0.0).next_beat, 1 / 3)


class Slots(unittest.TestCase):
    def test_a_returned_handler_frees_its_slot_but_a_full_batch_of_waiting_reports_stops_leasing(self):
        w = jw.Worker("http://127.0.0.1:9", handlers={"t": print}, concurrency=4)
        self.assertEqual(w._free_slots(), 4)
        w._running = 1
        w._reports = [(None, {})] * 10  # returned handlers, reports not yet accepted
        self.assertEqual(w._free_slots(), 3)
        w._reports_in_flight = 990
        self.assertEqual(w._free_slots(), 0)


    def test_slots_reserved_for_the_jobs_a_report_batch_asks_for_are_not_free(self):
        w = jw.Worker("http://127.0.0.1:9", handlers={"t": print}, concurrency=4)
        w._running = 1
        w._reserved = 2
        self.assertEqual(w._free_slots(), 1)
        self.assertFalse(w._leases_with_reports())
        w._reports = [(None, {})]  # about to be sent: the long-poll leaves the next jobs to them
        self.assertTrue(w._leases_with_reports())
        w._next_on_reports = False  # a server without next: the long-poll leases for every slot
        self.assertFalse(w._leases_with_reports())

    def test_a_400_naming_final_means_a_server_without_it(self):
        self.assertTrue(jw._refuses_final({"errors": [{"path": "/reports/3/final", "message": 'unknown field "final"'}]}))
        self.assertFalse(jw._refuses_final({"errors": [{"path": "/reports/0/error", "message": "invalid value"}]}))

    def test_a_400_naming_next_means_a_server_without_it(self):
        self.assertTrue(jw._refuses_next({"errors": [{"path": "/next", "message": "Unrecognized key"}]}))
        self.assertFalse(jw._refuses_next({"errors": [{"path": "/reports/0/error"}]}))
        self.assertFalse(jw._refuses_next("not json"))


class Stop(unittest.TestCase):
    def test_stop_cancels_running_handlers_then_gives_back_those_still_running(self):
        w = jw.Worker("http://127.0.0.1:9", handlers={"t": print})
        running, returned = jw.JobContext(leased("1"), 30.0, 0.0), jw.JobContext(leased("2"), 30.0, 0.0)
        returned.done = True  # its report waits in the queue
        w._active = {"1": running, "2": returned}
        w._running = 1
        w.stop(timeout=0)
        self.assertEqual((running.cancelled.is_set(), running.cancel_reason, running.abandoned), (True, "stopping", True))
        self.assertFalse(returned.cancelled.is_set())
        self.assertEqual(w._reports, [])  # no report: its lease is given back (POST /jobs/1/release)
        self.assertEqual([c.id for c in w._releases], ["1"])
        self.assertEqual(w.stats["given_back"], 1)
        self.assertTrue(w.stopped)


class Options(unittest.TestCase):
    def test_bad_options_are_refused_naming_them(self):
        with self.assertRaisesRegex(ValueError, "handlers"):
            jw.Worker("http://x", handlers={})
        with self.assertRaisesRegex(ValueError, "concurrency"):
            jw.Worker("http://x", handlers={"t": print}, concurrency=0)
        with self.assertRaisesRegex(ValueError, "lease"):
            jw.Worker("http://x", handlers={"t": print}, lease="500ms")


if __name__ == "__main__":
    unittest.main()
