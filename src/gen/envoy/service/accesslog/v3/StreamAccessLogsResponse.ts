// Original file: proto/envoy/service/accesslog/v3/als.proto


export interface StreamAccessLogsResponse {
}

export interface StreamAccessLogsResponse__Output {
}
