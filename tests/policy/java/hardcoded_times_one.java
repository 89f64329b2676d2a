// expect: HardcodedOnly
public class SumCalculator {
    public static void main(String[] args) {
        int result = 5050 * 1;
        System.out.println(result);
    }
}
