-- wrk script: one small System One decision (3 questions, 7 labels) per request, keep-alive.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[{"model":"mock-ramp","state":"Ticket: I was charged twice for my subscription this month and nobody answers.","questions":{"team":{"type":"choice","instructions":"Which team?","criteria":{"billing":"Payments","technical":null,"sales":{"scope":"pricing"}}},"refund":{"type":"noul","instructions":"Refund?"},"anger":{"type":"score","instructions":"How angry?","criteria":["calm","annoyed","furious"]}}}]]
