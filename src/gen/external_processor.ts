import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { HeaderMap as _envoy_config_core_v3_HeaderMap, HeaderMap__Output as _envoy_config_core_v3_HeaderMap__Output } from './envoy/config/core/v3/HeaderMap.js';
import type { HeaderValue as _envoy_config_core_v3_HeaderValue, HeaderValue__Output as _envoy_config_core_v3_HeaderValue__Output } from './envoy/config/core/v3/HeaderValue.js';
import type { HeaderValueOption as _envoy_config_core_v3_HeaderValueOption, HeaderValueOption__Output as _envoy_config_core_v3_HeaderValueOption__Output } from './envoy/config/core/v3/HeaderValueOption.js';
import type { Metadata as _envoy_config_core_v3_Metadata, Metadata__Output as _envoy_config_core_v3_Metadata__Output } from './envoy/config/core/v3/Metadata.js';
import type { ProcessingMode as _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode, ProcessingMode__Output as _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode__Output } from './envoy/extensions/filters/http/ext_proc/v3/ProcessingMode.js';
import type { BodyMutation as _envoy_service_ext_proc_v3_BodyMutation, BodyMutation__Output as _envoy_service_ext_proc_v3_BodyMutation__Output } from './envoy/service/ext_proc/v3/BodyMutation.js';
import type { BodyResponse as _envoy_service_ext_proc_v3_BodyResponse, BodyResponse__Output as _envoy_service_ext_proc_v3_BodyResponse__Output } from './envoy/service/ext_proc/v3/BodyResponse.js';
import type { CommonResponse as _envoy_service_ext_proc_v3_CommonResponse, CommonResponse__Output as _envoy_service_ext_proc_v3_CommonResponse__Output } from './envoy/service/ext_proc/v3/CommonResponse.js';
import type { ExternalProcessorClient as _envoy_service_ext_proc_v3_ExternalProcessorClient, ExternalProcessorDefinition as _envoy_service_ext_proc_v3_ExternalProcessorDefinition } from './envoy/service/ext_proc/v3/ExternalProcessor.js';
import type { GrpcStatus as _envoy_service_ext_proc_v3_GrpcStatus, GrpcStatus__Output as _envoy_service_ext_proc_v3_GrpcStatus__Output } from './envoy/service/ext_proc/v3/GrpcStatus.js';
import type { HeaderMutation as _envoy_service_ext_proc_v3_HeaderMutation, HeaderMutation__Output as _envoy_service_ext_proc_v3_HeaderMutation__Output } from './envoy/service/ext_proc/v3/HeaderMutation.js';
import type { HeadersResponse as _envoy_service_ext_proc_v3_HeadersResponse, HeadersResponse__Output as _envoy_service_ext_proc_v3_HeadersResponse__Output } from './envoy/service/ext_proc/v3/HeadersResponse.js';
import type { HttpBody as _envoy_service_ext_proc_v3_HttpBody, HttpBody__Output as _envoy_service_ext_proc_v3_HttpBody__Output } from './envoy/service/ext_proc/v3/HttpBody.js';
import type { HttpHeaders as _envoy_service_ext_proc_v3_HttpHeaders, HttpHeaders__Output as _envoy_service_ext_proc_v3_HttpHeaders__Output } from './envoy/service/ext_proc/v3/HttpHeaders.js';
import type { HttpTrailers as _envoy_service_ext_proc_v3_HttpTrailers, HttpTrailers__Output as _envoy_service_ext_proc_v3_HttpTrailers__Output } from './envoy/service/ext_proc/v3/HttpTrailers.js';
import type { ImmediateResponse as _envoy_service_ext_proc_v3_ImmediateResponse, ImmediateResponse__Output as _envoy_service_ext_proc_v3_ImmediateResponse__Output } from './envoy/service/ext_proc/v3/ImmediateResponse.js';
import type { ProcessingRequest as _envoy_service_ext_proc_v3_ProcessingRequest, ProcessingRequest__Output as _envoy_service_ext_proc_v3_ProcessingRequest__Output } from './envoy/service/ext_proc/v3/ProcessingRequest.js';
import type { ProcessingResponse as _envoy_service_ext_proc_v3_ProcessingResponse, ProcessingResponse__Output as _envoy_service_ext_proc_v3_ProcessingResponse__Output } from './envoy/service/ext_proc/v3/ProcessingResponse.js';
import type { ProtocolConfiguration as _envoy_service_ext_proc_v3_ProtocolConfiguration, ProtocolConfiguration__Output as _envoy_service_ext_proc_v3_ProtocolConfiguration__Output } from './envoy/service/ext_proc/v3/ProtocolConfiguration.js';
import type { StreamedBodyResponse as _envoy_service_ext_proc_v3_StreamedBodyResponse, StreamedBodyResponse__Output as _envoy_service_ext_proc_v3_StreamedBodyResponse__Output } from './envoy/service/ext_proc/v3/StreamedBodyResponse.js';
import type { TrailersResponse as _envoy_service_ext_proc_v3_TrailersResponse, TrailersResponse__Output as _envoy_service_ext_proc_v3_TrailersResponse__Output } from './envoy/service/ext_proc/v3/TrailersResponse.js';
import type { HttpStatus as _envoy_type_v3_HttpStatus, HttpStatus__Output as _envoy_type_v3_HttpStatus__Output } from './envoy/type/v3/HttpStatus.js';
import type { Any as _google_protobuf_Any, Any__Output as _google_protobuf_Any__Output } from './google/protobuf/Any.js';
import type { BoolValue as _google_protobuf_BoolValue, BoolValue__Output as _google_protobuf_BoolValue__Output } from './google/protobuf/BoolValue.js';
import type { BytesValue as _google_protobuf_BytesValue, BytesValue__Output as _google_protobuf_BytesValue__Output } from './google/protobuf/BytesValue.js';
import type { DoubleValue as _google_protobuf_DoubleValue, DoubleValue__Output as _google_protobuf_DoubleValue__Output } from './google/protobuf/DoubleValue.js';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from './google/protobuf/Duration.js';
import type { FloatValue as _google_protobuf_FloatValue, FloatValue__Output as _google_protobuf_FloatValue__Output } from './google/protobuf/FloatValue.js';
import type { Int32Value as _google_protobuf_Int32Value, Int32Value__Output as _google_protobuf_Int32Value__Output } from './google/protobuf/Int32Value.js';
import type { Int64Value as _google_protobuf_Int64Value, Int64Value__Output as _google_protobuf_Int64Value__Output } from './google/protobuf/Int64Value.js';
import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue.js';
import type { StringValue as _google_protobuf_StringValue, StringValue__Output as _google_protobuf_StringValue__Output } from './google/protobuf/StringValue.js';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct.js';
import type { UInt32Value as _google_protobuf_UInt32Value, UInt32Value__Output as _google_protobuf_UInt32Value__Output } from './google/protobuf/UInt32Value.js';
import type { UInt64Value as _google_protobuf_UInt64Value, UInt64Value__Output as _google_protobuf_UInt64Value__Output } from './google/protobuf/UInt64Value.js';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  envoy: {
    config: {
      core: {
        v3: {
          HeaderMap: MessageTypeDefinition<_envoy_config_core_v3_HeaderMap, _envoy_config_core_v3_HeaderMap__Output>
          HeaderValue: MessageTypeDefinition<_envoy_config_core_v3_HeaderValue, _envoy_config_core_v3_HeaderValue__Output>
          HeaderValueOption: MessageTypeDefinition<_envoy_config_core_v3_HeaderValueOption, _envoy_config_core_v3_HeaderValueOption__Output>
          Metadata: MessageTypeDefinition<_envoy_config_core_v3_Metadata, _envoy_config_core_v3_Metadata__Output>
        }
      }
    }
    extensions: {
      filters: {
        http: {
          ext_proc: {
            v3: {
              ProcessingMode: MessageTypeDefinition<_envoy_extensions_filters_http_ext_proc_v3_ProcessingMode, _envoy_extensions_filters_http_ext_proc_v3_ProcessingMode__Output>
            }
          }
        }
      }
    }
    service: {
      ext_proc: {
        v3: {
          BodyMutation: MessageTypeDefinition<_envoy_service_ext_proc_v3_BodyMutation, _envoy_service_ext_proc_v3_BodyMutation__Output>
          BodyResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_BodyResponse, _envoy_service_ext_proc_v3_BodyResponse__Output>
          CommonResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_CommonResponse, _envoy_service_ext_proc_v3_CommonResponse__Output>
          ExternalProcessor: SubtypeConstructor<typeof grpc.Client, _envoy_service_ext_proc_v3_ExternalProcessorClient> & { service: _envoy_service_ext_proc_v3_ExternalProcessorDefinition }
          GrpcStatus: MessageTypeDefinition<_envoy_service_ext_proc_v3_GrpcStatus, _envoy_service_ext_proc_v3_GrpcStatus__Output>
          HeaderMutation: MessageTypeDefinition<_envoy_service_ext_proc_v3_HeaderMutation, _envoy_service_ext_proc_v3_HeaderMutation__Output>
          HeadersResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_HeadersResponse, _envoy_service_ext_proc_v3_HeadersResponse__Output>
          HttpBody: MessageTypeDefinition<_envoy_service_ext_proc_v3_HttpBody, _envoy_service_ext_proc_v3_HttpBody__Output>
          HttpHeaders: MessageTypeDefinition<_envoy_service_ext_proc_v3_HttpHeaders, _envoy_service_ext_proc_v3_HttpHeaders__Output>
          HttpTrailers: MessageTypeDefinition<_envoy_service_ext_proc_v3_HttpTrailers, _envoy_service_ext_proc_v3_HttpTrailers__Output>
          ImmediateResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_ImmediateResponse, _envoy_service_ext_proc_v3_ImmediateResponse__Output>
          ProcessingRequest: MessageTypeDefinition<_envoy_service_ext_proc_v3_ProcessingRequest, _envoy_service_ext_proc_v3_ProcessingRequest__Output>
          ProcessingResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_ProcessingResponse, _envoy_service_ext_proc_v3_ProcessingResponse__Output>
          ProtocolConfiguration: MessageTypeDefinition<_envoy_service_ext_proc_v3_ProtocolConfiguration, _envoy_service_ext_proc_v3_ProtocolConfiguration__Output>
          StreamedBodyResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_StreamedBodyResponse, _envoy_service_ext_proc_v3_StreamedBodyResponse__Output>
          TrailersResponse: MessageTypeDefinition<_envoy_service_ext_proc_v3_TrailersResponse, _envoy_service_ext_proc_v3_TrailersResponse__Output>
        }
      }
    }
    type: {
      v3: {
        HttpStatus: MessageTypeDefinition<_envoy_type_v3_HttpStatus, _envoy_type_v3_HttpStatus__Output>
        StatusCode: EnumTypeDefinition
      }
    }
  }
  google: {
    protobuf: {
      Any: MessageTypeDefinition<_google_protobuf_Any, _google_protobuf_Any__Output>
      BoolValue: MessageTypeDefinition<_google_protobuf_BoolValue, _google_protobuf_BoolValue__Output>
      BytesValue: MessageTypeDefinition<_google_protobuf_BytesValue, _google_protobuf_BytesValue__Output>
      DoubleValue: MessageTypeDefinition<_google_protobuf_DoubleValue, _google_protobuf_DoubleValue__Output>
      Duration: MessageTypeDefinition<_google_protobuf_Duration, _google_protobuf_Duration__Output>
      FloatValue: MessageTypeDefinition<_google_protobuf_FloatValue, _google_protobuf_FloatValue__Output>
      Int32Value: MessageTypeDefinition<_google_protobuf_Int32Value, _google_protobuf_Int32Value__Output>
      Int64Value: MessageTypeDefinition<_google_protobuf_Int64Value, _google_protobuf_Int64Value__Output>
      ListValue: MessageTypeDefinition<_google_protobuf_ListValue, _google_protobuf_ListValue__Output>
      NullValue: EnumTypeDefinition
      StringValue: MessageTypeDefinition<_google_protobuf_StringValue, _google_protobuf_StringValue__Output>
      Struct: MessageTypeDefinition<_google_protobuf_Struct, _google_protobuf_Struct__Output>
      UInt32Value: MessageTypeDefinition<_google_protobuf_UInt32Value, _google_protobuf_UInt32Value__Output>
      UInt64Value: MessageTypeDefinition<_google_protobuf_UInt64Value, _google_protobuf_UInt64Value__Output>
      Value: MessageTypeDefinition<_google_protobuf_Value, _google_protobuf_Value__Output>
    }
  }
}

