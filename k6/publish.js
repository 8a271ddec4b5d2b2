// Publish load: backends publishing to many rooms through the internal API.
//   go install go.k6.io/k6@v1.8.1
//   HUB_URL=http://localhost:8083 INTERNAL_API_KEY=local_dev_internal_key ROOMS=100 \
//     k6 run --vus 50 --duration 30s k6/publish.js
// k6 cannot hold SSE streams without extensions; pair it with open streams
// (the demo page, or curl -N) to load fan-out too.
import http from 'k6/http';
import { check } from 'k6';

const url = (__ENV.HUB_URL || 'http://localhost:8083') + '/api/v1/notifications/publish';
const key = __ENV.INTERNAL_API_KEY || 'local_dev_internal_key';
const rooms = Number(__ENV.ROOMS || 100);

export const options = {
  thresholds: {
    http_req_failed: ['rate<0.001'],
    http_req_duration: ['p(99)<100'],
  },
};

export default function () {
  const body = JSON.stringify({
    roomId: 1 + Math.floor(Math.random() * rooms),
    eventType: 'comment.created',
    publisherId: 1 + (__VU % 1000),
    data: { text: 'load', vu: __VU, iter: __ITER },
  });
  const res = http.post(url, body, { headers: { 'Content-Type': 'application/json', 'X-Internal-Key': key } });
  check(res, {
    'status 200': (r) => r.status === 200,
    'has streamId': (r) => r.json('result.streamId') !== undefined,
  });
}
