//! `crud!`: the Get, GetByName, List, Create, Update and Delete every resource service has,
//! generated over the generic [`Core`](crate::sim::core::Core) operations, plus the
//! service's own methods passed in as a block.

macro_rules! crud {
    // The service's own Delete (buckets are soft-deleted): `delete: Request => handler`.
    (
        $trait:path, $service:literal, $res:ty,
        get: $get:ty, by_name: $by_name:ty, list: $list:ty => $list_resp:ty,
        create: $create:ty, update: $update:ty, delete: $delete:ty => $handler:ident,
        { $($extra:tt)* }
    ) => {
        $crate::sim::services::crud::crud!(
            @base $trait, $service, $res,
            get: $get, by_name: $by_name, list: $list => $list_resp,
            create: $create, update: $update,
            {
                async fn delete(&self, request: ::tonic::Request<$delete>) -> Result<::tonic::Response<$crate::cloud::proto::nebius::common::v1::Operation>, ::tonic::Status> {
                    self.$handler(request).await
                }
                $($extra)*
            }
        );
    };
    (
        $trait:path, $service:literal, $res:ty,
        get: $get:ty, by_name: $by_name:ty, list: $list:ty => $list_resp:ty,
        create: $create:ty, update: $update:ty, delete: $delete:ty,
        { $($extra:tt)* }
    ) => {
        $crate::sim::services::crud::crud!(
            @base $trait, $service, $res,
            get: $get, by_name: $by_name, list: $list => $list_resp,
            create: $create, update: $update,
            {
                async fn delete(&self, request: ::tonic::Request<$delete>) -> Result<::tonic::Response<$crate::cloud::proto::nebius::common::v1::Operation>, ::tonic::Status> {
                    let ctx = self.enter(&request, concat!("/", $service, "/Delete")).await?;
                    let mut core = self.lock();
                    let latency = core.latency();
                    let op = core.delete::<$res>(&ctx, &request.get_ref().id, latency)?;
                    $crate::sim::services::lost(&ctx)?;
                    Ok(::tonic::Response::new(op))
                }
                $($extra)*
            }
        );
    };
    (
        @base $trait:path, $service:literal, $res:ty,
        get: $get:ty, by_name: $by_name:ty, list: $list:ty => $list_resp:ty,
        create: $create:ty, update: $update:ty,
        { $($extra:tt)* }
    ) => {
        #[tonic::async_trait]
        impl $trait for $crate::sim::services::SimService {
            async fn get(&self, request: ::tonic::Request<$get>) -> Result<::tonic::Response<$res>, ::tonic::Status> {
                self.enter(&request, concat!("/", $service, "/Get")).await?;
                Ok(::tonic::Response::new(self.lock().get::<$res>(&request.get_ref().id)?))
            }
            async fn get_by_name(&self, request: ::tonic::Request<$by_name>) -> Result<::tonic::Response<$res>, ::tonic::Status> {
                self.enter(&request, concat!("/", $service, "/GetByName")).await?;
                let r = request.get_ref();
                Ok(::tonic::Response::new(self.lock().get_by_name::<$res>(&r.parent_id, &r.name)?))
            }
            async fn list(&self, request: ::tonic::Request<$list>) -> Result<::tonic::Response<$list_resp>, ::tonic::Status> {
                self.enter(&request, concat!("/", $service, "/List")).await?;
                let r = request.get_ref();
                let (items, next_page_token) = self.lock().list_children::<$res>(&r.parent_id, r.page_size, &r.page_token, |_| true)?;
                let mut response = <$list_resp>::default();
                response.items = items;
                response.next_page_token = next_page_token;
                Ok(::tonic::Response::new(response))
            }
            async fn create(&self, request: ::tonic::Request<$create>) -> Result<::tonic::Response<$crate::cloud::proto::nebius::common::v1::Operation>, ::tonic::Status> {
                let ctx = self.enter(&request, concat!("/", $service, "/Create")).await?;
                let r = request.into_inner();
                let mut core = self.lock();
                let latency = core.latency();
                let op = core.create::<$res>(&ctx, r.metadata.unwrap_or_default(), r.spec.unwrap_or_default(), latency)?;
                $crate::sim::services::lost(&ctx)?;
                Ok(::tonic::Response::new(op))
            }
            async fn update(&self, request: ::tonic::Request<$update>) -> Result<::tonic::Response<$crate::cloud::proto::nebius::common::v1::Operation>, ::tonic::Status> {
                let ctx = self.enter(&request, concat!("/", $service, "/Update")).await?;
                let r = request.into_inner();
                let mut core = self.lock();
                let latency = core.latency();
                let op = core.update::<$res>(&ctx, r.metadata.unwrap_or_default(), r.spec, latency)?;
                $crate::sim::services::lost(&ctx)?;
                Ok(::tonic::Response::new(op))
            }
            $($extra)*
        }
    };
}

pub(super) use crud;
