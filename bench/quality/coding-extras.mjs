// The coding set's other planted answers: sessions held in other languages, and words buried deep in long logs.

/**
 * Sessions whose user (and assistant) write in Chinese, Japanese, Korean, Thai or Hindi. `query` is what that
 * developer would type later: words of the session, space-separated. Topics differ from every incident's and
 * from each other, so only this session is about them.
 * @type {{ id: string, lang: 'zh' | 'ja' | 'ko' | 'th' | 'hi', project: string, prompt: string, summary: string, file: string, query: string }[]}
 */
export const NON_ENGLISH = [
  { id: 'Z1', lang: 'zh', project: 'gateway', file: 'docs/release.md', query: '部署 生产环境', prompt: '我们今天讨论了部署到生产环境的步骤。请把流程整理成一个文档：先在预发布环境验证，再分批发布到生产环境，最后观察监控指标。', summary: '文档已经写好了，放在 docs/release.md：1. 在预发布环境跑完整的冒烟测试；2. 分三批发布到生产环境，每批间隔十分钟；3. 观察错误率和延迟；4. 指标异常时立即回滚到上一个镜像。' },
  { id: 'Z2', lang: 'zh', project: 'ml-pipeline', file: 'pipeline/train.py', query: '数据加载器 内存泄漏', prompt: '训练任务的内存一直在涨，跑了三个小时就被系统杀掉了。帮我看看数据加载器是不是有内存泄漏。', summary: '找到原因了：每个批次的特征都被追加到一个全局列表里，从来没有清空。改成按批次写入磁盘以后，内存稳定在两个 GB 左右，数据加载器本身没有内存泄漏。' },
  { id: 'Z3', lang: 'zh', project: 'billing', file: 'src/api/handlers.rs', query: '对账单 导出', prompt: '帮我给账单服务加一个导出功能，把每个月的对账单导出成 CSV 文件，财务每个月初要用。', summary: '已经加好了：新增了一个子命令，会把上个月的对账单导出成 CSV，金额保留两位小数，文件按客户分组。' },
  { id: 'Z4', lang: 'zh', project: 'uploader', file: 'locales/zh-CN.json', query: '错误提示 中文', prompt: '帮我把上传页面的错误提示改成中文，现在很多用户看不懂英文的报错信息。', summary: '已经把上传相关的错误提示都翻译成中文了，放在 locales/zh-CN.json 里面，默认根据浏览器语言选择。' },
  { id: 'Z5', lang: 'zh', project: 'session-tools', file: 'src/cli/main.ts', query: '帮助信息 子命令', prompt: '命令行工具的帮助信息太长了，能不能按子命令分组显示？每个子命令一行说明就够了。', summary: '改好了：现在帮助信息按子命令分组显示，每个子命令只有一行说明，详细参数用 --help 查看。' },
  { id: 'J1', lang: 'ja', project: 'gateway', file: 'Makefile', query: 'APIドキュメント 自動生成', prompt: '社内向けのAPIドキュメントを自動生成したいです。OpenAPIの定義ファイルから作れますか？', summary: 'OpenAPIの定義ファイルからAPIドキュメントを自動生成するMakefileのターゲットを追加しました。make docs で docs/api.html が作られます。' },
  { id: 'J2', lang: 'ja', project: 'session-tools', file: 'src/cli/main.ts', query: '設定ファイル ホームディレクトリ', prompt: '設定ファイルをホームディレクトリ以外の場所にも置けるようにしてください。XDG_CONFIG_HOME に対応してほしいです。', summary: 'XDG_CONFIG_HOME が設定されていればそこを優先し、なければホームディレクトリの設定ファイルを読むようにしました。' },
  { id: 'J3', lang: 'ja', project: 'billing', file: 'src/pdf.rs', query: 'ロゴ 請求書', prompt: '請求書のPDFに会社のロゴを入れたいです。右上に小さく表示してください。', summary: '請求書のPDFの右上に会社のロゴを表示するようにしました。画像は assets/logo.png から読み込みます。' },
  { id: 'J4', lang: 'ja', project: 'ml-pipeline', file: 'pipeline/report.py', query: '混同行列 評価レポート', prompt: '評価レポートに混同行列のグラフを追加してください。クラスごとの再現率も見たいです。', summary: '評価レポートに混同行列のヒートマップとクラスごとの再現率の表を追加しました。' },
  { id: 'J5', lang: 'ja', project: 'uploader', file: 'src/routes/upload.ts', query: '進捗バー 止まって', prompt: 'アップロード画面の進捗バーが100%のまま止まってしまいます。完了の通知が来ていないようです。', summary: '最後のパートが終わった後に完了イベントを送っていなかったのが原因でした。修正したので、進捗バーは100%になった後に完了と表示されます。' },
  { id: 'K1', lang: 'ko', project: 'gateway', file: 'internal/proxy/proxy.go', query: '접근 로그', prompt: '게이트웨이 접근 로그에 요청 아이디를 추가해 주세요. 장애 분석할 때 꼭 필요합니다.', summary: '접근 로그의 모든 줄에 요청 아이디를 추가했습니다. 헤더에 X-Request-Id가 없으면 새로 만듭니다.' },
  { id: 'K2', lang: 'ko', project: 'billing', file: 'src/db/migrations.rs', query: '국가 코드 컬럼', prompt: '데이터베이스 마이그레이션 스크립트를 작성해 주세요. 고객 테이블에 국가 코드 컬럼을 추가해야 합니다.', summary: '고객 테이블에 국가 코드 컬럼을 추가하는 마이그레이션을 작성했습니다. 기존 데이터는 청구 주소에서 국가 코드를 채웁니다.' },
  { id: 'K3', lang: 'ko', project: 'ml-pipeline', file: 'pipeline/report.py', query: '실험 결과 대시보드', prompt: '실험 결과를 비교하는 대시보드를 만들고 싶어요. 정확도와 손실 그래프가 필요합니다.', summary: '실험 결과를 비교하는 대시보드를 만들었습니다. 실험마다 정확도와 손실 그래프를 나란히 보여 줍니다.' },
  { id: 'K4', lang: 'ko', project: 'session-tools', file: 'src/search/rank.ts', query: '검색 결과 날짜별', prompt: '검색 결과를 날짜별로 정렬하는 옵션을 추가해 주세요. 최신 세션이 먼저 나오면 좋겠습니다.', summary: '검색 결과를 날짜별로 정렬하는 --sort date 옵션을 추가했습니다. 기본값은 점수순입니다.' },
  { id: 'K5', lang: 'ko', project: 'uploader', file: 'src/storage/s3.ts', query: '썸네일 생성', prompt: '업로드가 끝나면 썸네일을 자동으로 생성해 주세요. 이미지 파일만 해당됩니다.', summary: '업로드가 끝난 이미지 파일에 대해 썸네일을 자동으로 생성하도록 했습니다. 크기는 320픽셀입니다.' },
  { id: 'T1', lang: 'th', project: 'billing', file: 'src/invoice.rs', query: 'ใบแจ้งหนี้ อีเมล', prompt: 'ช่วยเพิ่มระบบส่งใบแจ้งหนี้ทางอีเมลให้ลูกค้าโดยอัตโนมัติทุกสิ้นเดือน', summary: 'เพิ่มงานที่ส่งใบแจ้งหนี้ทางอีเมลให้ลูกค้าทุกสิ้นเดือนแล้วครับ ถ้าส่งไม่สำเร็จจะลองใหม่สามครั้ง' },
  { id: 'T2', lang: 'th', project: 'uploader', file: 'src/routes/upload.ts', query: 'จำกัดขนาดไฟล์ ข้อความเตือน', prompt: 'ระบบอัปโหลดควรจำกัดขนาดไฟล์ไม่เกิน 2 GB และแสดงข้อความเตือนที่ชัดเจน', summary: 'เพิ่มการจำกัดขนาดไฟล์ที่ 2 GB แล้วครับ ถ้าไฟล์ใหญ่เกินจะแสดงข้อความเตือนก่อนเริ่มอัปโหลด' },
  { id: 'T3', lang: 'th', project: 'ml-pipeline', file: 'tests/test_dates.py', query: 'การทดสอบ แปลงวันที่', prompt: 'อยากให้เพิ่มการทดสอบสำหรับฟังก์ชันแปลงวันที่ในไปป์ไลน์ด้วยครับ', summary: 'เพิ่มการทดสอบสำหรับฟังก์ชันแปลงวันที่แล้วครับ ครอบคลุมทั้งเขตเวลาและรูปแบบวันที่ที่ไม่ถูกต้อง' },
  { id: 'T4', lang: 'th', project: 'gateway', file: 'deploy/alerts.yaml', query: 'แจ้งเตือน เกตเวย์', prompt: 'ช่วยตั้งค่าการแจ้งเตือนใน Slack เมื่อเกตเวย์มีอัตราข้อผิดพลาดสูงเกินห้าเปอร์เซ็นต์', summary: 'ตั้งค่าการแจ้งเตือนไปที่ Slack แล้วครับ จะส่งเมื่ออัตราข้อผิดพลาดของเกตเวย์เกินห้าเปอร์เซ็นต์ติดต่อกันห้านาที' },
  { id: 'H1', lang: 'hi', project: 'session-tools', file: 'src/cli/main.ts', query: 'सर्च कमांड', prompt: 'कृपया सर्च कमांड में एक नया विकल्प जोड़ें जो केवल पिछले सात दिनों के सत्र दिखाए।', summary: 'सर्च कमांड में --days विकल्प जोड़ दिया है। --days 7 देने पर केवल पिछले सात दिनों के सत्र दिखते हैं।' },
  { id: 'H2', lang: 'hi', project: 'billing', file: 'src/pdf.rs', query: 'मासिक रिपोर्ट राजस्व', prompt: 'ग्राहकों की मासिक रिपोर्ट में कुल राजस्व का चार्ट जोड़ना है।', summary: 'मासिक रिपोर्ट में कुल राजस्व का चार्ट जोड़ दिया है, जो पिछले बारह महीनों का रुझान दिखाता है।' },
  { id: 'H3', lang: 'hi', project: 'ml-pipeline', file: 'pipeline/ingest.py', query: 'डुप्लिकेट पंक्तियाँ', prompt: 'डेटा सफाई वाले चरण में डुप्लिकेट पंक्तियाँ हटाने का कोड लिखिए।', summary: 'clean_events में डुप्लिकेट पंक्तियाँ हटाने का कोड जोड़ दिया है। event_id और समय के आधार पर डुप्लिकेट पहचाने जाते हैं।' },
  { id: 'H4', lang: 'hi', project: 'uploader', file: 'src/server.ts', query: 'वायरस स्कैन', prompt: 'अपलोड की गई फ़ाइलों के लिए वायरस स्कैन जोड़ना है।', summary: 'अपलोड की गई हर फ़ाइल अब स्टोरेज में जाने से पहले वायरस स्कैन से गुज़रती है। संक्रमित फ़ाइलें अलग रखी जाती हैं।' },
]

/** What the assistant says first, and the user's thanks at the end, per language. */
export const PHRASES = {
  zh: { opener: '好的，我先看一下相关的代码。', edit: '明白了，我来修改这个文件。', thanks: '谢谢，没问题了。' },
  ja: { opener: '了解しました。まず関連するコードを確認します。', edit: 'わかりました。このファイルを修正します。', thanks: 'ありがとうございます。確認しました。' },
  ko: { opener: '네, 먼저 관련 코드를 확인해 보겠습니다.', edit: '알겠습니다. 이 파일을 수정하겠습니다.', thanks: '감사합니다. 확인했습니다.' },
  th: { opener: 'ได้ครับ ขอดูโค้ดที่เกี่ยวข้องก่อนนะครับ', edit: 'เข้าใจแล้วครับ จะแก้ไขไฟล์นี้ให้', thanks: 'ขอบคุณครับ' },
  hi: { opener: 'ठीक है, पहले मैं संबंधित कोड देखता हूँ।', edit: 'समझ गया, मैं यह फ़ाइल बदलता हूँ।', thanks: 'धन्यवाद, अब ठीक है।' },
}

/**
 * Long logs: ~20 KB, pasted by the user or printed by a command, with `needle` (one token, found nowhere else in
 * the set) on one line past the first 2,000 characters. The assistant never repeats it.
 * @type {{ id: string, project: string, needle: string, command?: string }[]}
 */
export const LONG_LOGS = [
  { id: 'L1', project: 'uploader', needle: 'ERR_TLS_CERT_ALTNAME_INVALID', command: 'journalctl -u uploader --since "2 hours ago" --no-pager' },
  { id: 'L2', project: 'uploader', needle: 'ERR_STREAM_PREMATURE_CLOSE' },
  { id: 'L3', project: 'uploader', needle: 'SignatureDoesNotMatch', command: 'tail -n 300 logs/upload-worker.log' },
  { id: 'L4', project: 'billing', needle: 'deadlock_detected' },
  { id: 'L5', project: 'billing', needle: 'idle_in_transaction_session_timeout', command: 'kubectl logs deploy/billing-worker --since=3h' },
  { id: 'L6', project: 'billing', needle: 'idempotency_key_in_use' },
  { id: 'L7', project: 'session-tools', needle: 'ERR_INVALID_ARG_TYPE', command: 'cat ~/.cache/session-tools/debug.log' },
  { id: 'L8', project: 'session-tools', needle: 'EBUSY' },
  { id: 'L9', project: 'ml-pipeline', needle: 'ProvisionedThroughputExceededException', command: 'aws logs tail /ecs/ingest --since 6h' },
  { id: 'L10', project: 'ml-pipeline', needle: 'CUDA_ERROR_ILLEGAL_ADDRESS' },
  { id: 'L11', project: 'ml-pipeline', needle: 'SettingWithCopyWarning', command: 'python -m pipeline.cli backfill --month 2026-02 2>&1 | tail -n 300' },
  { id: 'L12', project: 'gateway', needle: 'CrashLoopBackOff', command: 'kubectl get events -n gateway --sort-by=.lastTimestamp' },
  { id: 'L13', project: 'gateway', needle: 'ImagePullBackOff' },
  { id: 'L14', project: 'gateway', needle: 'OOMKilled', command: 'kubectl logs -n gateway deploy/gateway --previous --tail=300' },
  { id: 'L15', project: 'gateway', needle: 'NXDOMAIN' },
]
