"""The LMS side of the evaluation core: what LTI activities add to it (submissions, the
teacher's review and gradebook, appeals, calibration examples, activity settings and the
agreement statistics). The edges (``app.lti``, ``app.web``, ``app.practice``) call these;
the core never does (it reaches them only through the owners registered at ``create_app``)."""
