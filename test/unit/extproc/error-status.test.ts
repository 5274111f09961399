import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ERROR_STATUS, grpcStatusOf, httpStatusOf } from '../../../src/extproc/error-status.js';

describe('extproc/error-status', () => {
  it('maps client errors to 4xx and server-side conditions to 5xx', () => {
    expect(httpStatusOf('BAD_REQUEST')).to.equal(400);
    expect(httpStatusOf('PAYLOAD_TOO_LARGE')).to.equal(413);
    expect(httpStatusOf('UNSUPPORTED_MEDIA')).to.equal(415);
    expect(httpStatusOf('OVERLOADED')).to.equal(429);
    expect(httpStatusOf('NO_ENDPOINT')).to.equal(503);
    expect(httpStatusOf('INTERNAL')).to.equal(500);
    expect(httpStatusOf('BAD_CONFIG')).to.equal(500);
  });

  it('never maps an error to gRPC OK', () => {
    for (const s of Object.values(ERROR_STATUS)) expect(s.grpc).to.not.equal(GrpcStatus.OK);
    expect(grpcStatusOf('PROTOCOL')).to.equal(GrpcStatus.INVALID_ARGUMENT);
  });
});
