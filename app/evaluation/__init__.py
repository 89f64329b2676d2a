"""The evaluation core: a stored file is graded by a strategy and its result kept, whoever
sent it (an LMS submission or a REST API evaluation), and no fault needs a person to finish it.

- :mod:`.lifecycle`: the job's states and the one way to change them (conditional updates).
- :mod:`.owners`: what each side adds (LTI: the student, activity, release and AGS; API: the
  organization, its reference and the callback), registered by that side.
- :mod:`.pipeline`: the grading job itself: claim, extract, grade, store, or wait and retry.
- :mod:`.budget`: monthly spend limits, checked before a grading starts (it waits if over).
- :mod:`.delivery`: messages to other systems (scores, column updates, callbacks), retried.
- :mod:`.sweeper`: the scheduler and healer: queues due retries and work Redis lost.

It knows neither Flask's requests nor the LMS: see docs/architecture.md.
"""
